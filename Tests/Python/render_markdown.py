#!/usr/bin/env python3
"""Renders Markdown with cmark-gfm, the renderer GitHub uses (through the `cmarkgfm` package): an implementation
independent of idpipe's, to check what a reviewer would see of report.md.

Reads a JSON list of Markdown documents from stdin and prints the JSON list of their HTML. Raw HTML is passed
through (cmark-gfm's "unsafe" option), so that HTML a document lets in shows in the output rather than being
dropped by the renderer.
"""
import json
import sys

import cmarkgfm
from cmarkgfm.cmark import Options


def main():
    documents = json.load(sys.stdin)
    html = [cmarkgfm.github_flavored_markdown_to_html(text, options=Options.CMARK_OPT_UNSAFE) for text in documents]
    json.dump(html, sys.stdout)


if __name__ == "__main__":
    main()
