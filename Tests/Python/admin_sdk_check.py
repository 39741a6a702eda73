#!/usr/bin/env python3
"""Drives the official firebase-admin SDK against the sandbox (FIREBASE_AUTH_EMULATOR_HOST must be set).

Usage: admin_sdk_check.py PROJECT_ID PRELOADED_ACCOUNT_COUNT
Prints one line per check and exits 1 at the first one that fails.
"""
import sys

import firebase_admin
from firebase_admin import auth


def check(condition, what):
    print(("ok   " if condition else "FAIL ") + what, flush=True)
    if not condition:
        sys.exit(1)


def main():
    project, preloaded = sys.argv[1], int(sys.argv[2])
    firebase_admin.initialize_app(options={"projectId": project})

    users = [
        auth.ImportUserRecord(
            uid="imp-1", email="imp1@example.com", display_name="Imp One", email_verified=True,
            custom_claims={"tier": "gold"},
            provider_data=[auth.UserProvider(uid="apple-sub-1", provider_id="apple.com", email="x@privaterelay.appleid.com")]),
        auth.ImportUserRecord(uid="imp-2", email="imp2@example.com", disabled=True),
        auth.ImportUserRecord(uid="imp-3", email="imp3@example.com", phone_number="+14155550100"),
    ]
    result = auth.import_users(users)
    check(result.success_count == 3 and result.failure_count == 0, f"import_users: {result.success_count} imported")


    seen = []
    page = auth.list_users(max_results=7)
    pages = 0
    while page:
        pages += 1
        seen.extend(user.uid for user in page.users)
        page = page.get_next_page()
    check(len(seen) == preloaded + 3 and len(set(seen)) == len(seen), f"list_users: {len(seen)} users in {pages} pages, no repeats")

    user = auth.get_user("imp-1")
    check(user.email == "imp1@example.com" and user.custom_claims == {"tier": "gold"}, "get_user: imported fields read back")
    check([p.provider_id for p in user.provider_data] == ["apple.com"], "get_user: provider data read back")

    # get_users sends every kind of identifier in one accounts:lookup, as idpipe's import check does.
    found = auth.get_users([
        auth.UidIdentifier("imp-2"),
        auth.EmailIdentifier("imp2@example.com"),
        auth.PhoneIdentifier("+14155550100"),
        auth.ProviderIdentifier("apple.com", "apple-sub-1"),
        auth.UidIdentifier("never-existed"),
        auth.EmailIdentifier("nobody@example.com"),
    ])
    uids = [user.uid for user in found.users]
    check(sorted(uids) == ["imp-1", "imp-2", "imp-3"] and len(uids) == 3,
          f"get_users: found by uid, email, phone number and federated id, each once: {uids}")
    check(len(found.not_found) == 2, f"get_users: a missing uid and email are not found ({len(found.not_found)})")
    check(auth.get_user_by_email("IMP2@example.com").uid == "imp-2", "get_user_by_email: letters compared regardless of case")
    check(auth.get_user_by_phone_number("+14155550100").uid == "imp-3", "get_user_by_phone_number")

    updated = auth.update_user("imp-1", display_name="Renamed By Admin")
    check(updated.display_name == "Renamed By Admin", "update_user: display name changed")

    auth.revoke_refresh_tokens("imp-1")
    after = auth.get_user("imp-1")
    check(after.tokens_valid_after_timestamp > 0, f"revoke_refresh_tokens: tokens valid after {after.tokens_valid_after_timestamp}")

    deleted = auth.delete_users(["imp-2", "imp-3", "never-existed"])
    check(deleted.success_count == 3 and deleted.failure_count == 0, "delete_users: 3 successes (a missing uid counts as deleted)")
    try:
        auth.get_user("imp-2")
        check(False, "get_user after delete raises UserNotFoundError")
    except auth.UserNotFoundError:
        check(True, "get_user after delete raises UserNotFoundError")

    try:
        auth.update_user("never-existed", display_name="x")
        check(False, "update_user of a missing uid raises UserNotFoundError")
    except auth.UserNotFoundError:
        check(True, "update_user of a missing uid raises UserNotFoundError")
    print("all checks passed")


if __name__ == "__main__":
    main()
