#!/usr/bin/env python3
"""Django's command-line utility."""

from __future__ import annotations

import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    from django.conf import settings
    from django.core.management import execute_from_command_line

    from config.startup import explain_failure, load_environment, run_or_exit

    load_environment()
    # Load the settings first so that a bad value stops here with one clear line.
    run_or_exit(lambda: settings.INSTALLED_APPS)
    try:
        execute_from_command_line(sys.argv)
    except Exception:
        explain_failure()  # one line when the database or Redis is not there
        raise


if __name__ == "__main__":
    main()
