#!/usr/bin/env python3
"""Verifies a JWT read from stdin with PyJWT (on the `cryptography` package): an implementation independent
of idpipe's OpenSSL code.

Usage: verify_jwt.py ALG PUBLIC_KEY_PEM_FILE AUDIENCE ISSUER
Prints the verified header and claims as JSON; exits 1 if the signature or a claim does not verify.
"""
import json
import sys

import jwt


def main():
    algorithm, key_file, audience, issuer = sys.argv[1:5]
    token = sys.stdin.read().strip()
    key = open(key_file).read()
    try:
        claims = jwt.decode(token, key, algorithms=[algorithm], audience=audience, issuer=issuer,
                            options={"require": ["iat", "exp", "iss", "aud"]})
    except jwt.PyJWTError as error:
        print(f"FAIL {type(error).__name__}: {error}")
        sys.exit(1)
    header = jwt.get_unverified_header(token)
    print(json.dumps({"header": header, "claims": claims}, sort_keys=True))


if __name__ == "__main__":
    main()
