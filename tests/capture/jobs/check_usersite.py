import os
import sys
import torch  # noqa: F401  (the agent attaches after this)
sys.exit(0 if os.environ.get("MEMLENS_TEST_USER_SITECUSTOMIZE") == "ran" else 5)
