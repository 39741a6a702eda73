#!/usr/bin/env python3
"""Deterministic generator of synthetic Firebase Authentication account sets for idpipe.

Writes files in the exact layout of `firebase auth:export` (JSON and/or the header-less
52-column CSV; Samples/README.md describes both) plus, optionally, the side inputs that the
pipeline reads (legacy names, deletion requests, stored tokens, a legacy user table).

    python3 Scripts/gen_samples.py --accounts N --seed S --out-dir DIR \
        [--format json|csv|both] [--prefix NAME] [--malformed] [--side-inputs [--side-prefix P]]

Properties:
  * Deterministic: the same arguments give byte-identical files (seeded random.Random
    streams, keyed BLAKE2b for ids; nothing depends on time, hash seeds or the locale).
  * Streaming: accounts are written as they are generated, in small batches; memory does not
    grow with N (only the positions of the malformed rows are planned up front).
  * The main account stream does not depend on --malformed or --side-inputs: malformed rows
    are mutations of the normal accounts at planned positions, and side inputs use their own
    random stream, so e.g. `--side-inputs` files match an export generated without them.

Standard library only (Python 3.11).
"""

from __future__ import annotations

import argparse
import base64
import csv
import hashlib
import json
import os
import random
import sys
import time
import unicodedata
from datetime import datetime, timezone
from json.encoder import encode_basestring as _jstr  # C-accelerated, ensure_ascii=False style

# ---------------------------------------------------------------------------------------------
# Constants
# ---------------------------------------------------------------------------------------------


def _ms(y: int, m: int, d: int) -> int:
    return int(datetime(y, m, d, tzinfo=timezone.utc).timestamp()) * 1000


T_2016 = _ms(2016, 1, 1)
T_APPLE_LAUNCH = _ms(2019, 9, 19)  # Sign in with Apple became available
T_CUTOFF = _ms(2024, 11, 1)  # "inactive" accounts last signed in before this
T_END = _ms(2026, 11, 1)  # the scenario's "now"

JSON_KEY_ORDER = (
    "localId", "email", "emailVerified", "passwordHash", "salt", "displayName", "photoUrl",
    "lastSignedInAt", "createdAt", "phoneNumber", "disabled", "customAttributes",
    "providerUserInfo",
)
PROVIDER_KEY_ORDER = ("providerId", "rawId", "email", "displayName", "photoUrl")

# 0-based start column of each provider's 4-column group (rawId, email, displayName, photoUrl)
CSV_PROVIDER_COLUMN = {
    "google.com": 7,
    "facebook.com": 11,
    "twitter.com": 15,
    "github.com": 19,
    "apple.com": 28,
    "microsoft.com": 32,
    "gc.apple.com": 36,
    "playgames.google.com": 40,
    "linkedin.com": 44,
    "yahoo.com": 48,
}
CSV_COLUMNS = 52

B62 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
LOWER_ALNUM = "abcdefghijklmnopqrstuvwxyz0123456789"
MIXED_ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
HEX = "0123456789abcdef"

# ---------------------------------------------------------------------------------------------
# Name pools: (native, ascii-for-email)
# ---------------------------------------------------------------------------------------------

WESTERN_GIVEN = [
    "James", "Mary", "John", "Patricia", "Robert", "Jennifer", "Michael", "Linda", "William",
    "Elizabeth", "David", "Barbara", "Richard", "Susan", "Joseph", "Jessica", "Thomas", "Sarah",
    "Charles", "Karen", "Daniel", "Emily", "Matthew", "Olivia", "Anthony", "Emma", "Mark",
    "Sophia", "Liam", "Ava", "Noah", "Mia", "Ethan", "Chloe", "Lucas", "Hannah", "Oliver",
    "Grace", "Jack", "Lily", "Jane", "Peter", "Laura", "Kevin", "Rachel", "Brian", "Megan",
    "Samuel", "Nora", "Henry", "Isla", "Leo", "Ruby", "Max", "Ella", "Finn", "Amelia",
]
WESTERN_FAMILY = [
    "Smith", "Johnson", "Williams", "Brown", "Jones", "Garcia", "Miller", "Davis", "Wilson",
    "Anderson", "Taylor", "Thomas", "Moore", "Martin", "Jackson", "White", "Harris", "Clark",
    "Lewis", "Walker", "Hall", "Young", "King", "Wright", "Scott", "Green", "Baker", "Adams",
    "Nelson", "Carter", "Mitchell", "Roberts", "O'Neill", "MacDonald", "Schmidt", "Fischer",
    "Weber", "Rossi", "Bianchi", "Dubois", "Laurent", "van der Berg", "de Vries", "Novak",
    "Kowalski", "Doe", "Murphy", "Kelly", "Evans", "Hughes", "Ward", "Price", "Bennett",
]
ACCENTED_GIVEN = [
    "José", "Zoë", "François", "Renée", "Jürgen", "Søren", "Björn", "Iñaki", "Mónica",
    "Chloé", "Łukasz", "Agnès", "Hélène", "Günther", "Ömer", "Çağla", "Saša", "Anaïs",
    "Raphaël", "Noémie", "Jörg", "Åsa", "Thérèse", "Andrés", "Małgorzata", "Dvořan",
]
ACCENTED_FAMILY = [
    "Müller", "Ångström", "Ñúñez", "García", "Pérez", "Gómez", "Dvořák", "Łukasiewicz",
    "Šimková", "Øvergård", "Schröder", "Lefèvre", "Jiménez", "Gonçalves", "Böhm", "Núñez",
    "Kovačević", "Sørensen", "Åberg", "Çelik", "Yılmaz", "Brontë", "Häkkinen", "Mägi",
]
JA_FAMILY = [
    ("山田", "yamada"), ("佐藤", "sato"), ("鈴木", "suzuki"), ("高橋", "takahashi"),
    ("田中", "tanaka"), ("伊藤", "ito"), ("渡辺", "watanabe"), ("中村", "nakamura"),
    ("小林", "kobayashi"), ("加藤", "kato"), ("吉田", "yoshida"), ("松本", "matsumoto"),
]
JA_GIVEN = [
    ("太郎", "taro"), ("花子", "hanako"), ("翔太", "shota"), ("陽菜", "hina"),
    ("大翔", "hiroto"), ("結衣", "yui"), ("蓮", "ren"), ("さくら", "sakura"),
    ("健一", "kenichi"), ("美咲", "misaki"), ("ゆうき", "yuki"), ("直樹", "naoki"),
]
ZH_FAMILY = [
    ("王", "wang"), ("李", "li"), ("张", "zhang"), ("刘", "liu"), ("陈", "chen"),
    ("杨", "yang"), ("黄", "huang"), ("赵", "zhao"), ("周", "zhou"), ("吴", "wu"),
]
ZH_GIVEN = [
    ("伟", "wei"), ("芳", "fang"), ("娜", "na"), ("敏", "min"), ("静", "jing"),
    ("磊", "lei"), ("洋", "yang"), ("艳", "yan"), ("勇", "yong"), ("军", "jun"),
    ("杰", "jie"), ("婷", "ting"), ("子涵", "zihan"), ("浩然", "haoran"), ("欣怡", "xinyi"),
]
KO_FAMILY = [
    ("김", "kim"), ("이", "lee"), ("박", "park"), ("최", "choi"), ("정", "jung"),
    ("강", "kang"), ("조", "cho"), ("윤", "yoon"), ("장", "jang"), ("임", "lim"),
]
KO_GIVEN = [
    ("민준", "minjun"), ("서연", "seoyeon"), ("지훈", "jihoon"), ("서윤", "seoyun"),
    ("도윤", "doyun"), ("하은", "haeun"), ("예준", "yejun"), ("지우", "jiwoo"),
    ("수빈", "subin"), ("현우", "hyunwoo"), ("지민", "jimin"), ("유진", "yujin"),
]

# Display names that need CSV quoting (comma, double quote, LF, CRLF). (given, family, display)
SPECIAL_PEOPLE = [
    ("John", "Smith", "Smith, John"),
    ("Anna", "Lee", 'Anna "Annie" Lee'),
    ("Line", "Break", "Line\nBreak"),
    ("Mary", "Jones", "Mary\r\nJones"),
    ("Chris", "O'Brien", 'Chris "CJ" O\'Brien, Jr.'),
    ("Paul", "Martin", "Martin, Paul\n(Work)"),
]


def _ascii_fold(s: str) -> str:
    out = []
    for ch in unicodedata.normalize("NFKD", s):
        if unicodedata.combining(ch):
            continue
        out.append(ch)
    folded = "".join(out)
    folded = (folded.replace("ł", "l").replace("Ł", "L").replace("ø", "o").replace("Ø", "O")
              .replace("ı", "i").replace("ß", "ss"))
    return "".join(c for c in folded.lower() if c.isascii() and c.isalnum())


def _latin_pool(given: list[str], family: list[str]):
    return ([(g, _ascii_fold(g)) for g in given], [(f, _ascii_fold(f)) for f in family])


W_GIVEN, W_FAMILY = _latin_pool(WESTERN_GIVEN, WESTERN_FAMILY)
A_GIVEN, A_FAMILY = _latin_pool(ACCENTED_GIVEN, ACCENTED_FAMILY)
# Accented people mix accented and plain parts ("José Smith", "Emma Müller").
A_GIVEN_MIX = A_GIVEN + W_GIVEN[:20]
A_FAMILY_MIX = A_FAMILY + W_FAMILY[:10]

# Email domains: (domain, weight). Script-specific preferences are added on top.
COMMON_DOMAINS = [
    "gmail.com", "gmail.com", "gmail.com", "gmail.com", "outlook.com", "outlook.com",
    "hotmail.com", "icloud.com", "icloud.com", "yahoo.com", "example.org", "example.com",
    "example.net", "proton.me", "web.de", "gmx.de", "aol.com", "live.com", "me.com",
]
SCRIPT_DOMAINS = {
    "ja": ["yahoo.co.jp", "docomo.ne.jp", "gmail.com", "icloud.com", "ezweb.ne.jp"],
    "zh": ["qq.com", "163.com", "gmail.com", "outlook.com"],
    "ko": ["naver.com", "daum.net", "gmail.com", "kakao.com"],
    "a": ["web.de", "gmx.de", "orange.fr", "libero.it", "gmail.com", "seznam.cz", "wp.pl"],
}
MIXED_CASE_DOMAINS = ["Example.COM", "GMail.com", "Outlook.COM", "ICloud.Com", "Web.DE"]
IDNA_DOMAINS = ["bücher.example", "例え.jp", "münchen.example", "правда.example", "한국.example"]
EMAIL_TAGS = ["news", "apps", "shop", "signup"]

CUSTOM_ATTRIBUTES = [
    '{"tier":"gold"}', '{"tier":"silver"}', '{"admin":true}', '{"role":"editor","beta":true}',
    '{"plan":"pro","seats":3}', '{"nickname":"たろう"}', '{"flags":["early","vip"]}',
    '{"region":"eu","tier":"free"}',
]

DELETION_SOURCES = ("app", "apple:account-delete", "apple:consent-revoked", "facebook:data-deletion")

US_AREAS = ("415", "212", "646", "312", "206", "617", "303", "512", "305", "404", "503", "702",
            "213", "310", "718", "202", "617", "919", "612", "801")

# (account kind, email domain) forced at fixed positions when N >= 20
FORCED_DOMAINS = [("password", "bücher.example"), ("apple", "例え.jp"),
                  ("facebook", "Example.COM")]

OTHER_PROVIDERS = ["github.com", "twitter.com", "microsoft.com", "yahoo.com", "linkedin.com"]

# Malformed variants, rotated in this order (all six kinds appear once >= 6 are planned).
MALFORMED_VARIANTS = [
    ("invalid_email", "not-an-email"),
    ("duplicate_local_id", None),
    ("bad_phone", "555-0100"),
    ("bad_timestamp", "yesterday"),
    ("missing_local_id", "omitted"),
    ("empty_provider_raw_id", None),
    ("invalid_email", "a@@b.com"),
    ("bad_phone", "+12"),
    ("missing_local_id", "empty"),
    ("invalid_email", "x@"),
]


# ---------------------------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------------------------


class UidMaker:
    """28-char [A-Za-z0-9] ids, unique by construction.

    x = (126 bits of keyed BLAKE2b(index)) << 40 | ((index * A + B) mod 2^40), A odd. The low
    40 bits are a bijection of the index, so x (< 2^166 < 62^28) is distinct for every index
    below 2^40, and so is its 28-digit base-62 spelling.
    """

    def __init__(self, seed: str):
        self.key = hashlib.sha256(f"idpipe-uid:{seed}".encode()).digest()
        self.a = int.from_bytes(self.key[:5], "big") | 1
        self.b = int.from_bytes(self.key[5:10], "big")

    def __call__(self, i: int) -> str:
        h = hashlib.blake2b(i.to_bytes(8, "little"), key=self.key, digest_size=16).digest()
        x = ((int.from_bytes(h, "big") >> 2) << 40) | ((i * self.a + self.b) & 0xFFFFFFFFFF)
        out = []
        # 4 chunks of 7 base-62 digits (62**7 < 2**42) keep the divisions on small ints.
        for _ in range(4):
            x, chunk = divmod(x, 3521614606208)  # 62**7
            for _ in range(7):
                chunk, d = divmod(chunk, 62)
                out.append(B62[d])
        return "".join(out)


class SeenFilter:
    """Bloom filter over normalised emails / phone numbers, so generated accounts never share
    one (Firebase enforces that). Memory is 2 bytes per account, not the accounts themselves;
    a false positive only makes the generator pick another address."""

    def __init__(self, n: int, seed: str):
        bits = 1 << 16
        while bits < 16 * max(n, 1):
            bits <<= 1
        self.mask = bits - 1
        self.bits = bytearray(bits >> 3)
        self.key = hashlib.sha256(f"idpipe-seen:{seed}".encode()).digest()

    def add_if_new(self, value: str) -> bool:
        h = int.from_bytes(hashlib.blake2b(value.encode(), key=self.key, digest_size=16).digest(), "big")
        h1, h2 = h & 0xFFFFFFFFFFFFFFFF, (h >> 64) | 1
        idx = [((h1 + j * h2) & self.mask) for j in range(5)]
        b = self.bits
        if all(b[x >> 3] & (1 << (x & 7)) for x in idx):
            return False
        for x in idx:
            b[x >> 3] |= 1 << (x & 7)
        return True


def rfc3339(ms: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ms // 1000))


def set_ordered(d: dict, key: str, value, order=JSON_KEY_ORDER) -> dict:
    """Return a copy of d with key set, keys in the canonical export order."""
    tmp = dict(d)
    tmp[key] = value
    return {k: tmp[k] for k in order if k in tmp}


# ---------------------------------------------------------------------------------------------
# Serialisers (byte-compatible with firebase-tools' exporter)
# ---------------------------------------------------------------------------------------------


def _jval(v) -> str:
    if v is True:
        return "true"
    if v is False:
        return "false"
    return _jstr(v)


def user_to_json(u: dict) -> str:
    """Equivalent to JavaScript JSON.stringify(user, null, 2) for our value types."""
    items = []
    for k, v in u.items():
        if k == "providerUserInfo":
            if not v:
                items.append('  "providerUserInfo": []')
                continue
            ents = []
            for p in v:
                ents.append("    {\n" + ",\n".join(
                    f'      "{pk}": {_jstr(pv)}' for pk, pv in p.items()) + "\n    }")
            items.append('  "providerUserInfo": [\n' + ",\n".join(ents) + "\n  ]")
        else:
            items.append(f'  "{k}": {_jval(v)}')
    return "{\n" + ",\n".join(items) + "\n}"


def _csv_escape(s: str) -> str:
    if "," in s or '"' in s or "\n" in s or "\r" in s:
        return '"' + s.replace('"', '""') + '"'
    return s


def user_to_csv(u: dict) -> str:
    row = [""] * CSV_COLUMNS
    row[0] = u.get("localId", "")
    row[1] = u.get("email", "")
    row[2] = "true" if u.get("emailVerified") else "false"
    row[3] = u.get("passwordHash", "")
    row[4] = u.get("salt", "")
    row[5] = _csv_escape(u.get("displayName", ""))
    row[6] = u.get("photoUrl", "")
    for p in u.get("providerUserInfo", ()):
        c = CSV_PROVIDER_COLUMN.get(p["providerId"])
        if c is None:
            continue
        row[c] = p.get("rawId", "")
        row[c + 1] = p.get("email", "")
        row[c + 2] = _csv_escape(p.get("displayName", ""))
        row[c + 3] = p.get("photoUrl", "")
    row[23] = u.get("createdAt", "")
    row[24] = u.get("lastSignedInAt", "")
    row[25] = u.get("phoneNumber", "")
    d = u.get("disabled")
    row[26] = "" if d is None else ("true" if d else "false")
    ca = u.get("customAttributes")
    row[27] = "" if ca is None else '"' + ca.replace('"', '""') + '"'
    return ",".join(row) + ",\n"


# ---------------------------------------------------------------------------------------------
# Account generation
# ---------------------------------------------------------------------------------------------


class Person:
    __slots__ = ("given", "family", "g_ascii", "f_ascii", "script", "special")

    def __init__(self, given, family, g_ascii, f_ascii, script, special=None):
        self.given = given
        self.family = family
        self.g_ascii = g_ascii
        self.f_ascii = f_ascii
        self.script = script  # "w" western, "a" accented latin, "ja", "zh", "ko", "s" special
        self.special = special  # display name override for the CSV-quoting cases


class Account:
    """One generated account: the export record plus the facts the side inputs need."""

    __slots__ = ("index", "user", "person", "kind", "apple_id", "fb_id", "created", "last",
                 "real_email")

    def __init__(self, index, user, person, kind, apple_id, fb_id, created, last, real_email):
        self.index = index
        self.user = user
        self.person = person
        self.kind = kind
        self.apple_id = apple_id
        self.fb_id = fb_id
        self.created = created
        self.last = last
        self.real_email = real_email


class AccountGenerator:
    def __init__(self, seed: int, n: int):
        self.n = n
        self.rng = random.Random(f"idpipe-gen-samples:{seed}:accounts")
        self.uid = UidMaker(str(seed))
        self.seen = SeenFilter(n, str(seed))
        # Forced special display names at fixed positions so that every sample has them.
        self.forced_special = {}
        self.forced_domain = {}
        if n >= 20:
            k = len(SPECIAL_PEOPLE)
            for j in range(k):
                self.forced_special[(2 * j + 1) * n // (2 * k) + 1] = j
            # Email domains that a normaliser must lower-case / punycode, on three kinds of
            # account, also at fixed positions.
            k = len(FORCED_DOMAINS)
            for j in range(k):
                pos = (2 * j + 1) * n // (2 * k) + 4
                if pos < n and pos not in self.forced_special:
                    self.forced_domain[pos] = FORCED_DOMAINS[j]

    def forced_positions(self) -> set[int]:
        return set(self.forced_special) | set(self.forced_domain)

    # -- small random helpers ---------------------------------------------------------------
    def _digits(self, k: int) -> str:
        r = self.rng
        return str(int(r.random() * 9 * 10 ** (k - 1)) + 10 ** (k - 1)) if k <= 15 else \
            str(r.randrange(10 ** (k - 1), 10 ** k))

    def _chars(self, alphabet: str, k: int) -> str:
        return "".join(self.rng.choices(alphabet, k=k))

    def _b64(self, nbytes: int) -> str:
        return base64.b64encode(self.rng.getrandbits(nbytes * 8).to_bytes(nbytes, "big")).decode()

    # -- people -----------------------------------------------------------------------------
    def person(self, i: int) -> Person:
        r = self.rng.random
        sp = self.forced_special.get(i)
        if sp is None and r() < 0.0004:
            sp = int(r() * len(SPECIAL_PEOPLE))
        if sp is not None:
            g, f, disp = SPECIAL_PEOPLE[sp]
            return Person(g, f, _ascii_fold(g), _ascii_fold(f), "s", disp)
        x = r()
        if x < 0.52:
            g, ga = W_GIVEN[int(r() * len(W_GIVEN))]
            f, fa = W_FAMILY[int(r() * len(W_FAMILY))]
            return Person(g, f, ga, fa, "w")
        if x < 0.67:
            g, ga = A_GIVEN_MIX[int(r() * len(A_GIVEN_MIX))]
            f, fa = A_FAMILY_MIX[int(r() * len(A_FAMILY_MIX))]
            return Person(g, f, ga, fa, "a")
        if x < 0.80:
            f, fa = JA_FAMILY[int(r() * len(JA_FAMILY))]
            g, ga = JA_GIVEN[int(r() * len(JA_GIVEN))]
            return Person(g, f, ga, fa, "ja")
        if x < 0.90:
            f, fa = ZH_FAMILY[int(r() * len(ZH_FAMILY))]
            g, ga = ZH_GIVEN[int(r() * len(ZH_GIVEN))]
            return Person(g, f, ga, fa, "zh")
        f, fa = KO_FAMILY[int(r() * len(KO_FAMILY))]
        g, ga = KO_GIVEN[int(r() * len(KO_GIVEN))]
        return Person(g, f, ga, fa, "ko")

    @staticmethod
    def clean_name(p: Person) -> str:
        """The name as a provider (Facebook, Google) reports it."""
        if p.special is not None:
            return p.special
        if p.script in ("ja", "zh", "ko"):
            return f"{p.family} {p.given}"
        return f"{p.given} {p.family}"

    def display_name(self, p: Person) -> str:
        """The user-level display name, with some of the noise that real data has."""
        r = self.rng.random
        if p.special is not None:
            return p.special
        if p.script in ("ja", "zh", "ko"):
            name = f"{p.family}{p.given}" if r() < 0.15 else f"{p.family} {p.given}"
        else:
            name = f"{p.given} {p.family}"
            if p.script == "a" and r() < 0.01:
                name = unicodedata.normalize("NFD", name)
        x = r()
        if x < 0.02:
            y = r()
            if y < 0.35:
                if p.script in ("ja", "zh", "ko") and r() < 0.5:
                    name = f"{p.family}\u3000{p.given}"  # ideographic space
                else:
                    name = name.replace(" ", "  ", 1) if " " in name else name + "  "
            elif y < 0.6:
                name = " " + name
            elif y < 0.85:
                name = name + " "
            else:
                name = "  " + name + " "
        return name

    # -- emails -----------------------------------------------------------------------------
    def real_email(self, p: Person, domain: str | None = None) -> str:
        """A plausible address for p that no other generated account uses (compared after
        trimming and lower-casing)."""
        for attempt in range(64):
            email = self._email_candidate(p, domain, attempt)
            if self.seen.add_if_new("mail:" + email.strip().lower()):
                return email
        raise RuntimeError("could not find an unused email address")

    def _email_candidate(self, p: Person, domain: str | None, attempt: int) -> str:
        r = self.rng.random
        g, f = p.g_ascii or "user", p.f_ascii or "user"
        # Retries (the address is taken) move to the "given + number" pattern, with a longer
        # number once a name is crowded.
        x = r() if attempt < 2 else 0.72 + 0.14 * r()
        big = 9999 if attempt < 8 else 9999999
        if x < 0.30:
            local = f"{g}.{f}"
        elif x < 0.50:
            local = f"{g}.{f}{int(r() * 99) + 1}"
        elif x < 0.62:
            local = f"{g[0]}{f}{int(r() * 999) + 1}"
        elif x < 0.72:
            local = f"{g}_{f}"
        elif x < 0.86:
            local = f"{g}{int(r() * big) + 1}"
        elif x < 0.94:
            local = f"{f}.{g}"
        else:
            local = f"{g}.{f}+{EMAIL_TAGS[int(r() * len(EMAIL_TAGS))]}"
        if domain is None:
            y = r()
            if y < 0.02:
                domain = MIXED_CASE_DOMAINS[int(r() * len(MIXED_CASE_DOMAINS))]
            elif y < 0.04:
                domain = IDNA_DOMAINS[int(r() * len(IDNA_DOMAINS))]
            elif y < 0.40 and p.script in SCRIPT_DOMAINS:
                lst = SCRIPT_DOMAINS[p.script]
                domain = lst[int(r() * len(lst))]
            else:
                domain = COMMON_DOMAINS[int(r() * len(COMMON_DOMAINS))]
        if r() < 0.03:  # some people type their address with capitals
            local = ".".join(part[:1].upper() + part[1:] for part in local.split("."))
        email = f"{local}@{domain}"
        if r() < 0.015:
            email = (" " + email) if r() < 0.5 else (email + " ")
        return email

    def relay_email(self) -> str:
        k = 10 + int(self.rng.random() * 3)
        return self._chars(LOWER_ALNUM, k) + "@privaterelay.appleid.com"

    # -- provider ids -----------------------------------------------------------------------
    def apple_sub(self) -> str:
        r = self.rng
        return (f"00{int(r.random() * 2)}{int(r.random() * 1000):03d}."
                f"{r.getrandbits(128):032x}.{int(r.random() * 10000):04d}")

    def facebook_id(self) -> str:
        x = self.rng.random()
        k = 15 if x < 0.2 else (16 if x < 0.55 else 17)
        return "1" + self._digits(k - 1) if k > 15 else self._digits(15)

    def google_id(self) -> str:
        return "1" + self._digits(10) + self._digits(10)

    def other_id(self, provider: str) -> str:
        r = self.rng
        if provider == "github.com":
            return str(int(r.random() * 150_000_000) + 1000)
        if provider == "twitter.com":
            return self._digits(8 + int(r.random() * 12))
        if provider == "microsoft.com":
            h = f"{r.getrandbits(128):032x}"
            return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"
        if provider == "yahoo.com":
            return self._chars("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 26)
        if provider == "linkedin.com":
            return self._chars(MIXED_ALNUM + "-_", 10)
        return self._digits(12)

    def photo(self, provider: str, raw_id: str) -> str:
        if provider == "facebook.com":
            return f"https://graph.facebook.com/{raw_id}/picture"
        if provider == "google.com":
            return ("https://lh3.googleusercontent.com/a/ACg8oc"
                    + self._chars(MIXED_ALNUM + "-_", 40) + "=s96-c")
        if provider == "github.com":
            return f"https://avatars.githubusercontent.com/u/{raw_id}?v=4"
        if provider == "twitter.com":
            return (f"https://pbs.twimg.com/profile_images/{self._digits(19)}/"
                    f"{self._chars(MIXED_ALNUM, 8)}_normal.jpg")
        if provider == "linkedin.com":
            return ("https://media.licdn.com/dms/image/C4E03AQ"
                    + self._chars(MIXED_ALNUM, 13) + "/profile-displayphoto-shrink_100_100/0/")
        return ""

    def phone(self) -> str | None:
        """An E.164 number (20% in a human format that normalisation must repair), unique among
        the generated accounts; None in the rare case the drawn number is already taken."""
        r = self.rng.random
        x = r()
        if x < 0.35:
            area = US_AREAS[int(r() * len(US_AREAS))]
            sub = f"{int(r() * 10000):04d}"
            num = f"+1{area}555{sub}"
            pretty = f"+1 ({area}) 555-{sub}"
        elif x < 0.55:
            mid, last = f"{int(r() * 10000):04d}", f"{int(r() * 10000):04d}"
            pre = ("90", "80", "70")[int(r() * 3)]
            num = f"+81{pre}{mid}{last}"
            pretty = f"+81 {pre}-{mid}-{last}"
        elif x < 0.70:
            rest = f"{int(r() * 10 ** 8):08d}"
            num = f"+4915{rest[:1]}{rest}"
            pretty = f"+49 15{rest[:1]} {rest}"
        elif x < 0.85:
            mid, last = f"{int(r() * 10000):04d}", f"{int(r() * 10000):04d}"
            num = f"+8210{mid}{last}"
            pretty = f"+82 10-{mid}-{last}"
        else:
            rest = f"{int(r() * 1000000):06d}"
            num = f"+447700{rest}"
            pretty = f"+44 7700 {rest}"
        if not self.seen.add_if_new("tel:" + num):
            return None
        return pretty if r() < 0.2 else num

    # -- the account ------------------------------------------------------------------------
    def account(self, i: int) -> Account:
        rng = self.rng
        r = rng.random
        person = self.person(i)
        x = r()
        forced_kind, dom = self.forced_domain.get(i, (None, None))
        if i in self.forced_special:
            # Facebook-only so the quoted name shows up in user and provider columns.
            kind = "facebook"
        elif forced_kind is not None:
            kind = forced_kind
        elif x < 0.32:
            kind = "apple"
        elif x < 0.35:
            kind = "apple+google"
        elif x < 0.50:
            kind = "apple+facebook"
        elif x < 0.70:
            kind = "facebook"
        elif x < 0.85:
            kind = "google"
        elif x < 0.95:
            kind = "password"
        else:
            kind = "other"

        # Timestamps
        min_created = T_APPLE_LAUNCH if kind.startswith("apple") else T_2016
        if r() < 0.2:  # inactive: last sign-in before the cutoff
            created = min_created + int(r() * (T_CUTOFF - min_created))
            last = created + int(r() * (T_CUTOFF - created))
        else:
            last = T_CUTOFF + int(r() * (T_END - T_CUTOFF))
            created = min_created + int(r() * (last - min_created))

        providers = []
        email = None
        email_verified = False
        display = None
        photo = None
        pw_hash = salt = None
        apple_id = fb_id = None
        real = None
        name = self.clean_name(person)

        if kind.startswith("apple"):
            apple_id = self.apple_sub()
            relay = r() < 0.55 and dom is None
            real = self.real_email(person, dom)
            email = self.relay_email() if relay else real
            email_verified = True
            # Provider emails come from the provider: never with the stray whitespace that
            # some top-level addresses have.
            apple = {"providerId": "apple.com", "rawId": apple_id, "email": email.strip()}
            if r() < 0.05:
                apple["displayName"] = name
            providers.append(apple)
            if r() >= 0.30:
                display = self.display_name(person)
            if kind == "apple+facebook":
                fb_id = self.facebook_id()
                fb = {"providerId": "facebook.com", "rawId": fb_id}
                if r() < 0.85:
                    fb["email"] = real.strip()
                fb["displayName"] = name
                if r() < 0.7:
                    fb["photoUrl"] = self.photo("facebook.com", fb_id)
                providers.append(fb)
                if display is not None and "photoUrl" in fb and r() < 0.4:
                    photo = fb["photoUrl"]
            elif kind == "apple+google":
                gid = self.google_id()
                gmail = self.real_email(person, "gmail.com").strip()
                g = {"providerId": "google.com", "rawId": gid, "email": gmail,
                     "displayName": name, "photoUrl": self.photo("google.com", gid)}
                providers.append(g)
        elif kind == "facebook":
            fb_id = self.facebook_id()
            fb = {"providerId": "facebook.com", "rawId": fb_id}
            if r() < 0.9 or dom is not None:
                real = self.real_email(person, dom)
                email = real
                fb["email"] = real.strip()
                email_verified = r() < 0.15
            fb["displayName"] = name
            if r() < 0.75:
                fb["photoUrl"] = self.photo("facebook.com", fb_id)
            providers.append(fb)
            display = self.display_name(person)
            if "photoUrl" in fb and r() < 0.8:
                photo = fb["photoUrl"]
        elif kind == "google":
            gid = self.google_id()
            real = self.real_email(person, "gmail.com" if r() < 0.8 else None)
            email = real
            email_verified = True
            g = {"providerId": "google.com", "rawId": gid, "email": real.strip(),
                 "displayName": name}
            if r() < 0.85:
                g["photoUrl"] = self.photo("google.com", gid)
            providers.append(g)
            display = self.display_name(person)
            if "photoUrl" in g and r() < 0.8:
                photo = g["photoUrl"]
        elif kind == "password":
            real = self.real_email(person, dom)
            email = real
            email_verified = r() < 0.6
            pw_hash = self._b64(64)
            salt = self._b64(10)
            if r() < 0.5:
                display = self.display_name(person)
        else:
            prov = OTHER_PROVIDERS[int(r() * len(OTHER_PROVIDERS))]
            pid = self.other_id(prov)
            p = {"providerId": prov, "rawId": pid}
            if prov == "microsoft.com":
                dom = "outlook.com" if r() < 0.7 else "hotmail.com"
            elif prov == "yahoo.com":
                dom = "yahoo.co.jp" if person.script == "ja" else "yahoo.com"
            else:
                dom = None
            has_mail = r() < (0.5 if prov in ("twitter.com", "github.com") else 0.95)
            if has_mail:
                real = self.real_email(person, dom)
                email = real
                p["email"] = real.strip()
                email_verified = r() < 0.7
            p["displayName"] = name
            ph = self.photo(prov, pid)
            if ph:
                p["photoUrl"] = ph
            providers.append(p)
            display = self.display_name(person)
            if ph and r() < 0.6:
                photo = ph
            if prov == "github.com" and r() < 0.3:  # some also linked Google
                gid = self.google_id()
                providers.append({"providerId": "google.com", "rawId": gid,
                                  "email": self.real_email(person, "gmail.com").strip(),
                                  "displayName": name})

        phone = self.phone() if r() < 0.05 else None
        disabled = r() < 0.03
        custom = CUSTOM_ATTRIBUTES[int(r() * len(CUSTOM_ATTRIBUTES))] if r() < 0.05 else None

        u = {"localId": self.uid(i)}
        if email is not None:
            u["email"] = email
        u["emailVerified"] = email_verified
        if pw_hash is not None:
            u["passwordHash"] = pw_hash
            u["salt"] = salt
        if display is not None:
            u["displayName"] = display
        if photo is not None:
            u["photoUrl"] = photo
        u["lastSignedInAt"] = str(last)
        u["createdAt"] = str(created)
        if phone is not None:
            u["phoneNumber"] = phone
        u["disabled"] = disabled
        if custom is not None:
            u["customAttributes"] = custom
        u["providerUserInfo"] = providers
        return Account(i, u, person, kind, apple_id, fb_id, created, last, real)


# ---------------------------------------------------------------------------------------------
# Malformed rows
# ---------------------------------------------------------------------------------------------


def plan_malformed(n: int, seed: int, avoid: set[int]) -> dict[int, tuple[str, str | None, int | None]]:
    """Positions -> (kind, variant, duplicate-source index). Deterministic, spread evenly."""
    if n < 2:
        return {}
    m = max(n // 100, min(len(MALFORMED_VARIANTS), n // 20))
    m = max(m, 1)
    mr = random.Random(f"idpipe-gen-samples:{seed}:malformed")
    slot = n / m
    positions: list[int] = []
    taken = set(avoid)
    for j in range(m):
        lo = int(j * slot)
        hi = max(lo + 1, int((j + 1) * slot))
        pos = lo + int(mr.random() * (hi - lo))
        tries = 0
        while (pos in taken or pos == 0) and tries < hi - lo + 2:
            pos = lo + (pos - lo + 1) % (hi - lo)
            tries += 1
        if pos in taken or pos == 0:
            continue
        taken.add(pos)
        positions.append(pos)
    plan: dict[int, tuple[str, str | None, int | None]] = {}
    mal = set(positions)
    sources: set[int] = set()
    for j, pos in enumerate(positions):
        kind, variant = MALFORMED_VARIANTS[j % len(MALFORMED_VARIANTS)]
        src = None
        if kind == "duplicate_local_id":
            src = int(mr.random() * pos)
            while src >= 0 and (src in mal or src in sources):
                src -= 1
            if src < 0:
                kind, variant = "invalid_email", "not-an-email"
                src = None
            else:
                sources.add(src)
        plan[pos] = (kind, variant, src)
    return plan


def apply_malformed(acc: Account, kind: str, variant: str | None, src_uid: str | None) -> str:
    """Mutates acc.user; returns a short description of the broken value."""
    u = acc.user
    if kind == "invalid_email":
        acc.user = set_ordered(u, "email", variant)
        return f"email={variant!r}"
    if kind == "duplicate_local_id":
        u["localId"] = src_uid
        return f"localId repeats an earlier account's ({src_uid})"
    if kind == "bad_phone":
        acc.user = set_ordered(u, "phoneNumber", variant)
        return f"phoneNumber={variant!r}"
    if kind == "bad_timestamp":
        u["createdAt"] = variant
        return f"createdAt={variant!r}"
    if kind == "missing_local_id":
        if variant == "omitted":
            del u["localId"]
            return "localId key omitted (CSV column 1 empty)"
        u["localId"] = ""
        return 'localId="" (CSV column 1 empty)'
    if kind == "empty_provider_raw_id":
        provs = u["providerUserInfo"]
        if provs:
            p = provs[0]
            p["rawId"] = ""
            if "email" not in p:
                mail = (u.get("email") or "unknown@example.com").strip()
                provs[0] = {k: (p[k] if k != "email" else mail)
                            for k in PROVIDER_KEY_ORDER if k in p or k == "email"}
                p = provs[0]
            return f"{p['providerId']} rawId=\"\" (email {p['email']!r} kept)"
        mail = (u.get("email") or "unknown@example.com").strip()
        p = {"providerId": "facebook.com", "rawId": "", "email": mail,
             "displayName": AccountGenerator.clean_name(acc.person)}
        provs.append(p)
        return f"facebook.com rawId=\"\" (email {mail!r} kept)"
    raise ValueError(kind)


# ---------------------------------------------------------------------------------------------
# Side inputs
# ---------------------------------------------------------------------------------------------


class SideInputs:
    def __init__(self, out_dir: str, prefix: str, seed: int, n: int, uid: UidMaker):
        self.rng = random.Random(f"idpipe-gen-samples:{seed}:side")

        def create(name):
            return open(os.path.join(out_dir, prefix + name), "w", encoding="utf-8", newline="")
        self.names_f = create("legacy-names.csv")
        self.del_f = create("deletion-requests.csv")
        self.tok_f = create("stored-tokens.jsonl")
        self.users_f = create("legacy-users.csv")
        self.names = csv.writer(self.names_f, lineterminator="\n")
        self.dels = csv.writer(self.del_f, lineterminator="\n")
        self.users = csv.writer(self.users_f, lineterminator="\n")
        self.names.writerow(["uid", "given_name", "family_name", "consent"])
        self.dels.writerow(["uid", "requested_at", "source"])
        self.users.writerow(["id", "mail", "full_name", "phone", "signup_date", "last_login",
                             "apple_sub", "facebook_id", "is_disabled"])
        # Deletion requests for uids that are not in the export (indices >= n are never used).
        self.ghosts = {n // 3: uid(n + 1), (2 * n) // 3: uid(n + 2)} if n >= 3 else {0: uid(n + 1)}
        self.counts = {"legacy_names": 0, "deletion_requests": 0, "stored_tokens": 0,
                       "legacy_users": 0, "ghost_deletion_requests": 0}
        self.other_name_people: list[Person] = []
        self.deletion_seq = 0

    def _tok_line(self, obj: dict) -> None:
        self.tok_f.write(json.dumps(obj, ensure_ascii=False, separators=(",", ":")) + "\n")
        self.counts["stored_tokens"] += 1

    def before(self, i: int) -> None:
        g = self.ghosts.get(i)
        if g is not None:
            r = self.rng.random
            when = T_END - int(r() * 30 * 86400_000)
            self.dels.writerow([g, rfc3339(when), "apple:account-delete" if r() < 0.5 else "app"])
            self.counts["deletion_requests"] += 1
            self.counts["ghost_deletion_requests"] += 1

    def add(self, acc: Account, original: dict, write: bool) -> None:
        """Decide (always, so the random stream does not depend on --malformed) and write
        (only when write is True) the side-input rows for one account."""
        rng = self.rng
        r = rng.random
        u = original
        p = acc.person
        has_apple = acc.apple_id is not None
        has_fb = acc.fb_id is not None
        uid = u.get("localId", "")

        # legacy-names.csv
        name_row = None
        if has_apple:
            if "displayName" not in u:
                if r() < 0.6:
                    name_row = [p.given, p.family]
            elif r() < 0.05:
                if r() < 0.5:
                    name_row = [p.given, p.family]
                else:  # a different name than the one in the export: must not overwrite it
                    other = self.other_name_people[int(r() * len(self.other_name_people))] \
                        if self.other_name_people else p
                    name_row = [other.given, other.family]
            if name_row is not None:
                if r() < 0.03:
                    name_row[0] = " " + name_row[0]
                if r() < 0.03:
                    name_row[1] = name_row[1] + " "
                consent = "true" if r() < 0.7 else "false"
                if write:
                    self.names.writerow([uid, name_row[0], name_row[1], consent])
                    self.counts["legacy_names"] += 1
        if len(self.other_name_people) < 64 and p.special is None:
            self.other_name_people.append(p)

        # deletion-requests.csv
        deleting = r() < 0.04
        if deleting:
            sources = ["app"]
            if has_apple:
                sources += ["apple:account-delete", "apple:consent-revoked"]
            if has_fb:
                sources.append("facebook:data-deletion")
            # Rotate a preferred source (advancing once it was used) so that even small
            # samples show every source.
            preferred = DELETION_SOURCES[self.deletion_seq % len(DELETION_SOURCES)]
            if preferred in sources and r() < 0.85:
                src = preferred
                self.deletion_seq += 1
            else:
                src = sources[int(r() * len(sources))]
            when = acc.last + int(r() * max(1, T_END - acc.last))
            if write:
                self.dels.writerow([uid, rfc3339(when), src])
                self.counts["deletion_requests"] += 1

        # stored-tokens.jsonl
        if has_apple or has_fb:
            if r() < (0.7 if deleting else 0.1):
                if has_apple:
                    x = r()
                    if x < 0.8:
                        typ = "refresh_token"
                        tok = f"r{rng.getrandbits(128):032x}.0.{''.join(rng.choices(MIXED_ALNUM, k=16))}"
                        cap = acc.created + int(r() * (acc.last - acc.created + 1))
                    elif x < 0.9:
                        typ = "access_token"
                        tok = f"a{rng.getrandbits(192):048x}"
                        cap = acc.last + int(r() * 600_000)
                    else:
                        typ = "authorization_code"
                        tok = f"c{rng.getrandbits(128):032x}.0.{''.join(rng.choices(MIXED_ALNUM, k=4))}"
                        cap = acc.created + int(r() * 5000)
                    if write:
                        self._tok_line({"uid": uid, "provider": "apple.com", "type": typ,
                                        "token": tok, "captured_at": rfc3339(cap)})
                if has_fb:
                    obj = {"uid": uid, "provider": "facebook.com", "facebook_id": acc.fb_id}
                    if r() < 0.2:
                        obj["login"] = "limited"
                    else:
                        obj["login"] = "classic"
                        if r() < 0.75:
                            obj["type"] = "access_token"
                            obj["token"] = "EAAB" + "".join(rng.choices(MIXED_ALNUM, k=96))
                    if write:
                        self._tok_line(obj)

        # legacy-users.csv
        if r() < 0.1 and write:
            self.users.writerow([
                uid, u.get("email", ""), u.get("displayName", ""), u.get("phoneNumber", ""),
                rfc3339(acc.created), rfc3339(acc.last), acc.apple_id or "", acc.fb_id or "",
                "1" if u.get("disabled") else "0",
            ])
            self.counts["legacy_users"] += 1

    def close(self) -> None:
        for f in (self.names_f, self.del_f, self.tok_f, self.users_f):
            f.close()


# ---------------------------------------------------------------------------------------------
# Main
# ---------------------------------------------------------------------------------------------


def _copy_user(u: dict) -> dict:
    c = dict(u)
    c["providerUserInfo"] = [dict(p) for p in u["providerUserInfo"]]
    return c


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--accounts", type=int, required=True, help="number of accounts (N)")
    ap.add_argument("--seed", type=int, required=True, help="random seed")
    ap.add_argument("--out-dir", required=True, help="output directory (created if missing)")
    ap.add_argument("--format", choices=("json", "csv", "both"), default="both")
    ap.add_argument("--prefix", default="accounts", help="file name stem (default: accounts)")
    ap.add_argument("--malformed", action="store_true",
                    help="insert deliberately broken rows (~1 per 100 accounts)")
    ap.add_argument("--side-inputs", action="store_true",
                    help="also write legacy-names.csv, deletion-requests.csv, "
                         "stored-tokens.jsonl, legacy-users.csv")
    ap.add_argument("--side-prefix", default="",
                    help="put this before the side inputs' names (so exports of other sizes in the same "
                         "directory keep their own)")
    args = ap.parse_args(argv)
    n = args.accounts
    if n < 0:
        ap.error("--accounts must be >= 0")
    t0 = time.perf_counter()
    os.makedirs(args.out_dir, exist_ok=True)

    gen = AccountGenerator(args.seed, n)
    plan = plan_malformed(n, args.seed, gen.forced_positions()) if args.malformed else {}
    dup_sources = {src for (_k, _v, src) in plan.values() if src is not None}
    suppress = dup_sources | {pos for pos, (k, _v, _s) in plan.items()
                              if k in ("duplicate_local_id", "missing_local_id")}

    want_json = args.format in ("json", "both")
    want_csv = args.format in ("csv", "both")
    jf = open(os.path.join(args.out_dir, args.prefix + ".json"), "w", encoding="utf-8",
              newline="") if want_json else None
    cf = open(os.path.join(args.out_dir, args.prefix + ".csv"), "w", encoding="utf-8",
              newline="") if want_csv else None
    side = SideInputs(args.out_dir, args.side_prefix, args.seed, n, gen.uid) if args.side_inputs else None

    jbuf: list[str] = []
    cbuf: list[str] = []
    if jf:
        jf.write('{"users": [\n')
    json_line = 2  # line where the next user object starts
    csv_line = 1  # line where the next record starts
    kinds: dict[str, int] = {}
    malformed_report = []
    first = True
    for i in range(n):
        acc = gen.account(i)
        kinds[acc.kind] = kinds.get(acc.kind, 0) + 1
        if side is not None:
            side.before(i)
        m = plan.get(i)
        if m is not None:
            original = _copy_user(acc.user)
            src_uid = gen.uid(m[2]) if m[2] is not None else None
            what = apply_malformed(acc, m[0], m[1], src_uid)
            if m[2] is not None:
                what += f" at index {m[2]}"
            malformed_report.append((i, acc.user.get("localId"), m[0], what, json_line, csv_line))
        else:
            original = acc.user
        if side is not None:
            side.add(acc, original, i not in suppress)
        u = acc.user
        if jf:
            s = user_to_json(u)
            jbuf.append(s if first else ",\n" + s)
            json_line += s.count("\n") + 1  # the next object starts after ",\n"
        if cf:
            s = user_to_csv(u)
            cbuf.append(s)
            csv_line += s.count("\n")
        first = False
        if (i & 2047) == 2047:
            if jf:
                jf.write("".join(jbuf))
                jbuf.clear()
            if cf:
                cf.write("".join(cbuf))
                cbuf.clear()
    if side is not None and n in side.ghosts:
        side.before(n)
    if jf:
        jbuf.append("]}")
        jf.write("".join(jbuf))
        jf.close()
    if cf:
        cf.write("".join(cbuf))
        cf.close()
    if side is not None:
        side.close()

    err = sys.stderr
    if malformed_report:
        print(f"malformed rows ({len(malformed_report)}); index is 0-based, lines are 1-based "
              f"start lines of the record in {args.prefix}.json / {args.prefix}.csv:", file=err)
        for i, uid, kind, what, jl, cl in malformed_report:
            print(f"  malformed index={i} uid={uid if uid else '-'} kind={kind} "
                  f"json_line={jl if want_json else '-'} csv_line={cl if want_csv else '-'} :: {what}",
                  file=err)
    mix = " ".join(f"{k}={v}" for k, v in sorted(kinds.items()))
    side_counts = ""
    if side is not None:
        side_counts = " " + " ".join(f"{k}={v}" for k, v in side.counts.items())
    print(f"gen_samples: accounts={n} format={args.format} seed={args.seed} "
          f"malformed={len(malformed_report)} [{mix}]{side_counts} "
          f"seconds={time.perf_counter() - t0:.2f}", file=err)
    return 0


if __name__ == "__main__":
    sys.exit(main())
