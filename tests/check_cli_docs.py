#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""The man page and `rlock --help` must not drift apart.

Usage: check_cli_docs.py RLOCK_BINARY MAN_PAGE

Checks, printing every difference and exiting 1 if there is any:
  - the synopsis lines of `rlock --help` (its "Usage:" block) and of the
    man page's SYNOPSIS agree word for word, in the same order;
  - each command's own `rlock COMMAND --help` usage is that command's
    synopsis lines, in the same order (the commands are those listed under
    "Commands:"; latch has one line per verb);
  - every option in the man page's OPTIONS (the tags of its .TP items)
    is in the help texts' option lists (main and commands), and the
    reverse;
  - every exit status a help text lists (its "Exit status:" block) is
    one the man page's EXIT STATUS describes, and the commands that
    write to standard output (status, list, top, unlock, latch, leader)
    list 74, its failure, and every command lists 71 (a thread that
    cannot start: each makes a client, which starts one).

Roff is rendered just enough for that: font macros (.B, .I, .BR, .RB,
.IR, .RI, .BI, .IB) join their arguments as groff does, escapes are
resolved or dropped, other requests are ignored.
"""
import re
import subprocess
import sys

FONT_JOIN = {"BR", "RB", "IR", "RI", "BI", "IB"}  # arguments joined
FONT_SPACE = {"B", "I", "SM", "SB"}  # arguments kept apart by spaces


def unescape(s):
    """A roff string as plain text."""
    s = re.sub(r"\\f(\(..|\[[^]]*\]|.)", "", s)  # font changes
    s = s.replace(r"\-", "-").replace(r"\&", "").replace(r"\e", "\\")
    s = s.replace(r"\ ", " ").replace(r"\~", " ").replace(r"\|", "")
    s = s.replace(r"\(dq", '"').replace(r"\(em", "--")
    return s


def roff_args(rest):
    """A macro's arguments: split on blanks; "..." keeps blanks (and ""
    inside it is one quote), as roff reads them."""
    args, i, n = [], 0, len(rest)
    while i < n:
        if rest[i] == " ":
            i += 1
        elif rest[i] == '"':
            arg, i = "", i + 1
            while i < n:
                if rest.startswith('""', i):
                    arg, i = arg + '"', i + 2
                elif rest[i] == '"':
                    i += 1
                    break
                else:
                    arg, i = arg + rest[i], i + 1
            args.append(arg)
        else:
            j = rest.find(" ", i)
            j = n if j < 0 else j
            args.append(rest[i:j])
            i = j
    return args


def render(line):
    """One roff input line as text ('' for requests we ignore)."""
    if line.startswith(".\\\""):
        return ""
    if not line.startswith("."):
        return unescape(line)
    name, _, rest = line[1:].partition(" ")
    args = [unescape(a) for a in roff_args(rest)]
    if name in FONT_JOIN:
        return "".join(args)
    if name in FONT_SPACE:
        return " ".join(args)
    return ""


def man_sections(path):
    """{section name: [lines]} of a man page."""
    sections, cur = {}, None
    with open(path, encoding="utf-8") as f:
        for line in f.read().splitlines():
            if line.startswith(".SH "):
                cur = line[4:].strip().strip('"')
                sections[cur] = []
            elif cur is not None:
                sections[cur].append(line)
    return sections


def man_synopsis(lines):
    """The SYNOPSIS entries, each a list of words; .br separates them."""
    entries, words = [], []
    for line in lines:
        if line.strip() == ".br":
            entries.append(words)
            words = []
        else:
            words += render(line).split()
    if words:
        entries.append(words)
    return [e for e in entries if e]


OPTION = re.compile(r"(?<![\w-])(--[a-z][a-z0-9-]*|-[a-zA-Z])(?![\w])")


def man_options(lines):
    """Every option named in the tag line of a .TP item."""
    opts = set()
    for i, line in enumerate(lines[:-1]):
        if line.startswith(".TP"):
            opts |= set(OPTION.findall(render(lines[i + 1])))
    return opts


def run_help(binary, *args):
    p = subprocess.run([binary, *args, "--help"], capture_output=True,
                       text=True, timeout=30)
    if p.returncode != 0:
        sys.exit(f"{binary} {' '.join(args)} --help exited {p.returncode}: "
                 f"{p.stderr.strip()}")
    return p.stdout


def help_synopsis(text):
    """The "Usage:" block's entries, each a list of words; an entry starts
    with "rlock" as the line's first word."""
    lines = text.split("\n")
    start = next(i for i, l in enumerate(lines) if l.startswith("Usage:"))
    entries = []
    for line in lines[start:]:
        if not line.strip():
            break
        words = line.replace("Usage:", "", 1).split() \
            if line.startswith("Usage:") else line.split()
        if words and words[0] == "rlock":
            entries.append(words)
        elif entries:
            entries[-1] += words
    return entries


def help_options(text):
    """Options named in the tag column: lines indented 1 to 6 blanks that
    start with '-', up to the first run of two blanks."""
    opts = set()
    for line in text.split("\n"):
        m = re.match(r"^( {1,6})(-\S.*)$", line)
        if m:
            tag = re.split(r" {2,}", m.group(2))[0]
            opts |= set(OPTION.findall(tag))
    return opts


def help_exit_codes(text):
    """The statuses of the "Exit status:" block ("126/127" is two)."""
    lines = text.split("\n")
    if "Exit status:" not in lines:
        return set()
    codes = set()
    for line in lines[lines.index("Exit status:") + 1:]:
        m = re.match(r"^  (\S+)\s", line)
        if m:
            codes |= set(m.group(1).split("/"))
        elif not line.startswith("    "):
            break
    return codes


def man_exit_codes(lines):
    """The tags of the EXIT STATUS section's .TP items."""
    return {render(lines[i + 1]).strip()
            for i, line in enumerate(lines[:-1]) if line.startswith(".TP")}


STDOUT_COMMANDS = {"status", "list", "top", "unlock", "latch", "leader"}


def help_commands(text):
    """The command names listed under "Commands:"."""
    lines = text.split("\n")
    start = lines.index("Commands:") + 1
    cmds = []
    for line in lines[start:]:
        m = re.match(r"^  ([a-z]+) ", line)
        if m:
            cmds.append(m.group(1))
        elif not line.startswith("    "):
            break
    return cmds


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    binary, man = sys.argv[1], sys.argv[2]
    errors = []
    sections = man_sections(man)
    main_help = run_help(binary)

    man_syn = man_synopsis(sections.get("SYNOPSIS", []))
    help_syn = help_synopsis(main_help)
    for i in range(max(len(man_syn), len(help_syn))):
        m = " ".join(man_syn[i]) if i < len(man_syn) else "(none)"
        h = " ".join(help_syn[i]) if i < len(help_syn) else "(none)"
        if m != h:
            errors.append(f"synopsis line {i + 1} differs:\n"
                          f"  man:    {m}\n  --help: {h}")

    opts = help_options(main_help)
    man_codes = man_exit_codes(sections.get("EXIT STATUS", []))
    codes = {"rlock": help_exit_codes(main_help)}
    cmds = help_commands(main_help)
    if not cmds:
        errors.append("rlock --help lists no commands under 'Commands:'")
    for cmd in cmds:
        text = run_help(binary, cmd)
        opts |= help_options(text)
        codes[f"rlock {cmd}"] = help_exit_codes(text)
        if cmd in STDOUT_COMMANDS and "74" not in codes[f"rlock {cmd}"]:
            errors.append(f"rlock {cmd} --help: its exit statuses omit 74 "
                          f"(cannot write the output)")
        if "71" not in codes[f"rlock {cmd}"]:
            errors.append(f"rlock {cmd} --help: its exit statuses omit 71 "
                          f"(every command starts the client's thread)")
        own = help_synopsis(text)
        mine = [e for e in help_syn if cmd in e]
        if not own or own != mine:
            errors.append(
                f"rlock {cmd} --help usage differs from rlock --help:\n"
                f"  {cmd} --help: {' / '.join(' '.join(e) for e in own)}\n"
                f"  --help:      {' / '.join(' '.join(e) for e in mine)}")

    for who, cs in codes.items():
        if not cs:
            errors.append(f"{who} --help lists no exit status")
        for c in sorted(cs - man_codes):
            errors.append(f"{who} --help: exit status {c} is not in the man "
                          f"page's EXIT STATUS")

    man_opts = man_options(sections.get("OPTIONS", []))
    for o in sorted(man_opts - opts):
        errors.append(f"option {o} is in the man page's OPTIONS but in no "
                      f"--help text")
    for o in sorted(opts - man_opts):
        errors.append(f"option {o} is in --help but not in the man page's "
                      f"OPTIONS")
    if not man_opts or not man_syn:
        errors.append(f"{man}: no SYNOPSIS or no OPTIONS found")

    for e in errors:
        print(e)
    if errors:
        return 1
    print(f"{len(help_syn)} synopsis lines, {len(opts)} options and "
          f"{len(set().union(*codes.values()))} exit statuses agree "
          f"({len(cmds)} commands)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
