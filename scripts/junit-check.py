#!/usr/bin/env python3
"""Read a JUnit XML file with junitparser (Debian's python3-junitparser, a
JUnit consumer independent of reproboard) and print what it saw as JSON:
the totals and, per testcase, its result and message. reproboard's tests
compare that with the board. Exit 3 when junitparser is not installed, so
the caller can skip with that reason."""
import json
import sys

try:
    import junitparser
except ImportError:
    print("junitparser is not installed (apt-get install python3-junitparser)", file=sys.stderr)
    sys.exit(3)

xml = junitparser.JUnitXml.fromfile(sys.argv[1])
if isinstance(xml, junitparser.TestSuite):
    suites = [xml]
else:
    suites = list(xml)
cases = []
totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
for suite in suites:
    for case in suite:
        results = case.result
        kind, message = "passed", ""
        if results:
            r = results[0]
            kind = type(r).__name__.lower()  # failure, error, skipped
            message = r.message or ""
        props = {}
        for p in case.iterchildren(junitparser.Properties):
            for prop in p:
                props[prop.name] = prop.value
        cases.append({"suite": suite.name, "name": case.name, "classname": case.classname,
                      "result": kind, "message": message, "properties": props})
        totals["tests"] += 1
        if kind in ("failure", "error", "skipped"):
            totals[{"failure": "failures", "error": "errors", "skipped": "skipped"}[kind]] += 1
json.dump({"totals": totals, "cases": cases,
           "declared": {"tests": xml.tests, "failures": xml.failures, "errors": xml.errors, "skipped": xml.skipped}},
          sys.stdout, indent=1)
