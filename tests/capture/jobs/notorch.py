"""A Python job that never imports torch."""
import sys
print("no torch here", flush=True)
sys.exit(int(sys.argv[1]) if len(sys.argv) > 1 else 0)
