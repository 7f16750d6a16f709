#!/usr/bin/env python3
"""Writes a man page (roff) from a program's --help text, as help2man would, without running
anything but the program itself: make-man.py PROGRAM NAME "ONE-LINE SUMMARY" VERSION > NAME.1
Used by packaging/build-deb.sh for memlens(1) and memlens-cli(1)."""
import datetime
import os
import subprocess
import sys


def roff(text):
    out = []
    for line in text.splitlines():
        line = line.replace("\\", "\\e")
        if line.startswith((".", "'")):
            line = "\\&" + line
        out.append(line)
    return "\n".join(out)


def main():
    program, name, summary, version = sys.argv[1:5]
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen")
    p = subprocess.run([program, "--help"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                       timeout=60)
    text = p.stdout or p.stderr
    lines = [l for l in text.splitlines() if not l.startswith("QStandardPaths:")]
    # the usage line names the binary as it was run: the installed name instead
    lines = [l.replace(program, name) for l in lines]
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    date = datetime.datetime.utcfromtimestamp(int(epoch)).date() if epoch else datetime.date.today()
    see = {"memlens": "memlens-cli", "memlens-cli": "memlens"}.get(name, "memlens")
    sys.stdout.write(
        '.TH %s 1 "%s" "memlens %s" "User Commands"\n'
        ".SH NAME\n%s \\- %s\n"
        ".SH SYNOPSIS\n.nf\n%s\n.fi\n"
        ".SH DESCRIPTION\nThe text of \\fB%s \\-\\-help\\fR:\n.PP\n.nf\n%s\n.fi\n"
        ".SH FILES\n.TP\n.I /usr/share/memlens/example.pickle\nthe bundled example snapshot\n"
        ".TP\n.I /usr/share/memlens/python\nthe Python agent (importable as memlens_agent)\n"
        ".SH SEE ALSO\n\\fB%s\\fR(1), /usr/share/doc/memlens/README.md\n"
        % (name.upper(), date.isoformat(), version, name, roff(summary), roff(lines[0] if lines else name),
           name, roff("\n".join(lines[1:])), see))


if __name__ == "__main__":
    main()
