"""``python -m connector demo|inspect|check`` (same as the ``asyncapi-kafka`` command)."""
import sys

from connector.cli import main

sys.exit(main())
