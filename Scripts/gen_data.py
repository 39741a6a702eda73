#!/usr/bin/env python3
"""Deterministic generator of the sandbox's user-data fixture (Firestore, Realtime Database and
Cloud Storage) for the accounts of a `firebase auth:export` JSON file.

    python3 Scripts/gen_data.py --accounts FILE --out FILE [--seed S] [--project P] [--light]

Every account (uid = localId) gets data in each store, next to shared data that belongs to
nobody, so tests can delete the data of selected accounts at configured paths and compare
before and after. Layout (P = --project):

    {"firestore": {"(default)": {"<document path>": {<flat fields>}, ...}},
     "database":  {"P-default-rtdb": <the whole database as one JSON tree>},
     "storage":   {"P.appspot.com": {"<object name>": {"size": N, "contentType": "..."}, ...}}}

Cases the tests rely on:
  * ~15% of accounts have no `users/{uid}` document but do have documents below it (Firestore's
    "missing document"). `inbox/{uid}` never exists, only `inbox/{uid}/items/*`.
  * Subcollections nest 3 levels below `users/{uid}` (chats/messages/reactions) for at least 20%
    of accounts (~10% with --light).
  * ~10% of accounts have `users/{uid}-archive/old.zip`: it starts with the uid but is not under
    the prefix `users/{uid}/`.
  * --light: at most 4 documents, 1 RTDB subtree and 1 object per account (crash tests).

Deterministic: the same input and arguments give byte-identical output (one seeded
random.Random, accounts in file order). Records without a non-empty string localId are
skipped, and so are uids that cannot be a path segment or RTDB key; a repeated uid gets data
once. Standard library only (Python 3.11).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time

LOWER_ALNUM = "abcdefghijklmnopqrstuvwxyz0123456789"
LOCALES = ["en-US", "en-GB", "de-DE", "fr-FR", "ja-JP", "zh-CN", "ko-KR", "es-ES"]
PLATFORMS = ["ios", "android", "web"]
TEXTS = ["hello", "see you", "ok", "thanks!", "lunch?", "お疲れさま", "좋아요", "très bien"]
EMOJI = ["👍", "❤️", "😂", "🎉"]
T0 = 1_600_000_000_000  # epoch ms, Sept 2020

# ---------------------------------------------------------------------------------------------
# Fixture
# ---------------------------------------------------------------------------------------------


class Fixture:
    """The three stores being built; `rng` is the only source of randomness."""

    def __init__(self, rng: random.Random):
        self.rng = rng
        self.docs: dict[str, dict] = {}
        self.db: dict = {}
        self.objects: dict[str, dict] = {}
        self.counts = {"missing_parents": 0, "deep": 0, "archives": 0}

    def id(self) -> str:
        return "".join(self.rng.choices(LOWER_ALNUM, k=8))

    def ts(self) -> int:
        return T0 + self.rng.randrange(200_000_000_000)

    def doc(self, path: str, fields: dict) -> str:
        assert len(path.split("/")) % 2 == 0 and path not in self.docs, path
        self.docs[path] = fields
        return path

    def obj(self, name: str, content_type: str, lo: int = 2_000, hi: int = 2_000_000) -> None:
        self.objects[name] = {"size": self.rng.randint(lo, hi), "contentType": content_type}

    def shared(self, uids: list[str]) -> None:
        rng = self.rng
        self.doc("config/app", {"version": "1"})
        for _ in range(5):
            post = self.doc(f"posts/{self.id()}", {"author": rng.choice(uids) if uids else "nobody",
                                                   "title": rng.choice(TEXTS), "createdAt": self.ts()})
            for _ in range(rng.randint(1, 2)):
                self.doc(f"{post}/comments/{self.id()}", {"text": rng.choice(TEXTS), "at": self.ts()})
        self.db["config"] = {"maintenance": False}
        self.obj("public/banner.png", "image/png")
        self.obj("public/terms.pdf", "application/pdf")

    def rtdb_user(self, n_keys: int) -> dict:
        rng = self.rng
        makers = {
            "settings": lambda: {"theme": rng.choice(["dark", "light"]), "push": rng.random() < 0.5},
            "score": lambda: rng.randint(0, 500),
            "lastSeen": self.ts,
            "profile": lambda: {"locale": rng.choice(LOCALES),
                                "stats": {"games": rng.randint(1, 99), "wins": rng.randint(0, 50)}},
            "flags": lambda: {"beta": True},
        }
        return {k: makers[k]() for k in rng.sample(list(makers), n_keys)}

    def account(self, i: int, uid: str, light: bool) -> None:
        """Data of the i-th generated account (i counts from 0)."""
        rng, r = self.rng, self.rng.random
        base = f"users/{uid}"
        has_parent = r() < 0.85
        if has_parent:
            self.doc(base, {"plan": "pro" if r() < 0.25 else "free",
                            "locale": rng.choice(LOCALES), "createdBy": "app"})
        else:
            self.counts["missing_parents"] += 1
        # chats/messages/reactions: at random, and forced whenever the share so far would
        # drop below 20%, so that tests can count on it (full mode only)
        deep = r() < 0.1 if light else (r() < 0.25 or self.counts["deep"] < 0.2 * (i + 1))
        self.counts["deep"] += deep
        if light:
            if deep or not has_parent or r() < 0.4:
                chat = self.doc(f"{base}/chats/{self.id()}", {"title": rng.choice(TEXTS)})
                if deep:
                    msg = self.doc(f"{chat}/messages/{self.id()}", {"from": uid, "sentAt": self.ts()})
                    self.doc(f"{msg}/reactions/{self.id()}", {"emoji": rng.choice(EMOJI)})
            self.db.setdefault("users", {})[uid] = self.rtdb_user(rng.randint(1, 2))
            if r() < 0.7:
                self.obj(f"{base}/avatar.jpg", "image/jpeg", 5_000, 400_000)
            return

        n_devices, n_chats = rng.randint(0, 3), rng.randint(0, 2)
        if deep or (not has_parent and n_devices == 0):
            n_chats = max(1, n_chats)  # a missing parent still has subcollections
        for _ in range(n_devices):
            self.doc(f"{base}/devices/{self.id()}", {"platform": rng.choice(PLATFORMS),
                                                     "lastSeen": self.ts(), "push": r() < 0.6})
        for c in range(n_chats):
            chat = self.doc(f"{base}/chats/{self.id()}", {"title": rng.choice(TEXTS),
                                                          "createdAt": self.ts()})
            n_msgs = rng.randint(1 if deep and c == 0 else 0, 4)
            for m in range(n_msgs):
                msg = self.doc(f"{chat}/messages/{self.id()}", {"from": uid, "text": rng.choice(TEXTS),
                                                                "sentAt": self.ts()})
                n_reactions = rng.randint(1 if c == m == 0 else 0, 2) if deep else 0
                for _ in range(n_reactions):
                    self.doc(f"{msg}/reactions/{self.id()}", {"emoji": rng.choice(EMOJI), "by": uid})
        if r() < 0.6:
            self.doc(f"profiles/{uid}", {"public": r() < 0.5, "locale": rng.choice(LOCALES)})
        for _ in range(rng.randint(0, 3)):
            self.doc(f"inbox/{uid}/items/{self.id()}", {"kind": rng.choice(["notice", "invite"]),
                                                        "read": r() < 0.5, "at": self.ts()})

        self.db.setdefault("users", {})[uid] = self.rtdb_user(rng.randint(1, 4))
        if r() < 0.5:
            self.db.setdefault("presence", {})[uid] = True

        if r() < 0.7:
            self.obj(f"{base}/avatar.jpg", "image/jpeg", 5_000, 400_000)
        for n in range(1, rng.randint(0, 3) + 1):
            self.obj(f"{base}/uploads/{n}.jpg", "image/jpeg")
        if r() < 0.1:
            self.obj(f"{base}-archive/old.zip", "application/zip")
            self.counts["archives"] += 1


def usable(uid) -> bool:
    """A non-empty string that can be a Firestore document id and an RTDB key."""
    return (isinstance(uid, str) and uid != "" and not set(uid) & set("/.#$[]")
            and not (uid.startswith("__") and uid.endswith("__")))


def leaves(v) -> int:
    return sum(leaves(x) for x in v.values()) if isinstance(v, dict) else 1


# ---------------------------------------------------------------------------------------------
# Main
# ---------------------------------------------------------------------------------------------


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--accounts", required=True, help="firebase auth:export JSON file")
    ap.add_argument("--out", required=True, help="fixture file to write")
    ap.add_argument("--seed", type=int, default=7, help="random seed (default: 7)")
    ap.add_argument("--project", default="demo-idpipe",
                    help="project id, names the RTDB instance and bucket (default: demo-idpipe)")
    ap.add_argument("--light", action="store_true",
                    help="few items per account (<= 4 documents, 1 RTDB subtree, 1 object)")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()

    with open(args.accounts, encoding="utf-8") as f:
        export = json.load(f)
    users = export.get("users") if isinstance(export, dict) else None
    if not isinstance(users, list):
        ap.error(f"{args.accounts}: no \"users\" array")
    ids = (u.get("localId") if isinstance(u, dict) else None for u in users)
    uids = list(dict.fromkeys(uid for uid in ids if usable(uid)))  # file order, first of repeats

    fx = Fixture(random.Random(args.seed))
    fx.shared(uids)
    for i, uid in enumerate(uids):
        fx.account(i, uid, args.light)
    out = {"firestore": {"(default)": fx.docs},
           "database": {f"{args.project}-default-rtdb": fx.db},
           "storage": {f"{args.project}.appspot.com": fx.objects}}
    if os.path.dirname(args.out):
        os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w", encoding="utf-8", newline="") as f:
        json.dump(out, f, indent=1, sort_keys=True, ensure_ascii=False)
        f.write("\n")

    extra = " ".join(f"{k}={v}" for k, v in fx.counts.items())
    print(f"gen_data: accounts={len(uids)} skipped={len(users) - len(uids)} "
          f"documents={len(fx.docs)} rtdb_leaves={leaves(fx.db)} objects={len(fx.objects)} "
          f"[{extra}] light={args.light} seed={args.seed} "
          f"seconds={time.perf_counter() - t0:.2f}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
