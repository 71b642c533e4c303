#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Print the slowest tests of a ctest run, from its JUnit file.

    scripts/ctest_slowest.py JUNIT [N] [LABEL]

JUNIT is the file `ctest --output-junit` wrote; N defaults to 10; LABEL
(e.g. "release") heads the list. Prints the N longest tests, longest
first, with their times and status, then the sum of every test's time
(what the run would take on one job). Exits 0 whatever the tests' status
(ctest's own exit status says whether they passed), and 64 on a missing or
unreadable file.
"""
import sys
import xml.etree.ElementTree as ET


def main(argv):
    if len(argv) < 2 or len(argv) > 4:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 64
    n = int(argv[2]) if len(argv) > 2 else 10
    label = argv[3] if len(argv) > 3 else argv[1]
    try:
        root = ET.parse(argv[1]).getroot()
    except (OSError, ET.ParseError) as e:
        print(f"ctest_slowest: {argv[1]}: {e}", file=sys.stderr)
        return 64
    tests = []
    for tc in root.iter("testcase"):
        try:
            secs = float(tc.get("time", "0"))
        except ValueError:
            secs = 0.0
        status = tc.get("status", "?")
        if tc.find("failure") is not None:
            status = "failed"
        elif tc.find("skipped") is not None or status == "notrun":
            status = "skipped"
        else:
            status = "passed" if status == "run" else status
        tests.append((secs, tc.get("name", "?"), status))
    tests.sort(key=lambda t: -t[0])
    total = sum(t[0] for t in tests)
    print(f"==> {label}: the {min(n, len(tests))} slowest of {len(tests)} tests")
    for secs, name, status in tests[:n]:
        print(f"    {secs:8.1f} s  {name}{'' if status == 'passed' else '  (' + status + ')'}")
    print(f"    {total:8.1f} s  in all, on one job")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
