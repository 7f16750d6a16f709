"""The checks of a GPU script's report (capture/tests/gpu/run.sh merges them into summary.json):
each {name, ok, detail}, printed as it is noted."""


class Checks:
    def __init__(self):
        self.rows = []

    def note(self, name, ok, detail=""):
        self.rows.append({"name": name, "ok": bool(ok), "detail": detail})
        print("  %s: %s: %s" % ("ok" if ok else "FAILED", name, detail), flush=True)
        return ok

    def finish(self, what):
        """Prints 'WHAT: N checks, K failed' and returns the exit status (1 when any failed)."""
        failed = sum(not r["ok"] for r in self.rows)
        print("%s: %d checks, %d failed" % (what, len(self.rows), failed), flush=True)
        return 1 if failed else 0
