"""Rebuild every GUI sample trajectory under samples/ (web, os, android).

Usage, from the repository root: python3 samples/tools/gen_all.py
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import android  # noqa: E402
import osdesk  # noqa: E402
import web  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main():
    web.build_all(ROOT)
    osdesk.build_all(ROOT)
    android.build_all(ROOT)


if __name__ == "__main__":
    main()
