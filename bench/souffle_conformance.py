"""Run Soufflé's own test programs with ``diffflow run``, the way Soufflé's test harness runs ``souffle``.

    python bench/souffle_conformance.py --souffle ~/src/souffle            # every class
    python bench/souffle_conformance.py --souffle ~/src/souffle --category provenance -v
    python bench/souffle_conformance.py --souffle ~/src/souffle --only aggregates4 range

``--souffle`` is a checkout of https://github.com/souffle-lang/souffle (only its ``tests/``
folder is read; nothing of it is copied here).  Each test's ``CMakeLists.txt`` line says how
Soufflé's harness (``cmake/SouffleTests.cmake``) runs it; this script does the same with
``diffflow run`` in place of ``souffle``:

- a fresh output folder; the program run there as ``diffflow run -D . -F TEST/facts
  TEST/TEST.dl`` (``-D -`` for the tests that print outputs to stdout; ``-I`` for include
  folders; the ``.in`` script on stdin for the provenance tests);
- a positive test passes when its ``.csv`` outputs are, as sorted rows, the expected ones
  (as many files as expected, same rows), and so is stdout (sorted lines, as the harness
  compares ``TEST.out``); a negative test passes when the run fails (exit status not 0);
- stderr is compared too, but reported apart (``err differs``): diffflow's messages are its
  own (``file:line:col: error: ...``), so only the outputs decide a pass.

Tests that need what diffflow does not have as Soufflé has it are listed in ``KEPT`` with the
reason (a documented difference: README, "Soufflé's own tests, and the differences diffflow
keeps"), and counted separately; tests whose harness is a program of its own (C++ functor
libraries, sqlite3 outputs) and tests Soufflé's repository lacks files for (``BROKEN``) are
not run and are counted as such.

The result is a table per class (Soufflé's test folders, positive and negative apart):
passed, failed, kept differences, not run; ``-v`` lists every failure with its first reason,
``--json FILE`` writes every test's outcome.  Tests run two at a time (``-j``) with a time
limit each (``--timeout``, 120 s by default; Soufflé's own harness has 1,500 s).
"""
from __future__ import annotations

import argparse
import concurrent.futures
import gzip
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field

CATEGORIES = ("evaluation", "example", "semantic", "syntactic", "provenance")

# Tests whose only difference is one diffflow keeps on purpose (README, "Soufflé's own tests,
# and the differences diffflow keeps"): name -> the difference.
KEPT = {
    "count_sccs1": "ord of a symbol is a number from its hash, not Soufflé's symbol-table index, "
                   "so ord(a) < ord(b) orders symbols differently",
    "choice_highest_mark": "choice-domain keeps the first candidate in value order, Soufflé "
                           "the first its evaluation meets",
    "magic_negignored": "autoinc() in a rule's body is an error: diffflow numbers a rule's "
                        "rows in value order, Soufflé reads a global counter",
}

# Soufflé's own tests that cannot pass with any engine: their fact files are not in Soufflé's
# repository (the example folder is off by default in Soufflé's CI, so nothing notices).
BROKEN = {
    "access-policy": "Soufflé's test lacks its fact files (view_cwPriv.facts, ...)",
    "magic_access-policy": "Soufflé's test lacks its fact files (inscwPriv.facts, ...)",
}

# Tests run by a harness of their own (not ``souffle`` on a program) are not run here.
NOT_RUN_CALLS = {"souffle_positive_functor_test": "needs a C++ functor library (-L)"}


@dataclass(eq=False)
class SoufflesTest:
    """One run of Soufflé's harness: a program, its facts folder and how it is judged."""

    category: str
    name: str
    negative: bool = False
    stdout_outputs: bool = False
    facts_dir: str = "facts"
    multi: bool = False
    include_dirs: list = field(default_factory=list)
    extra: str = ""
    not_run: str = ""

    @property
    def label(self):
        return f"{self.name}_{self.facts_dir}" if self.multi else self.name

    @property
    def klass(self):
        if self.category in ("semantic", "syntactic"):
            return f"{self.category} {'negative' if self.negative else 'positive'}"
        return self.category


def _calls(text):
    """The top-level calls of a CMakeLists.txt (outside ``function ... endfunction``), as
    ``(name, [arguments])``; ``if (FALSE)`` blocks are skipped."""
    text = re.sub(r"#[^\n]*", "", text)
    text = re.sub(r"(?is)\bfunction\s*\(.*?\bendfunction\s*\(\s*\)", "", text)
    text = re.sub(r"(?is)\bif\s*\(\s*FALSE\s*\).*?\bendif\s*\(\s*\)", "", text)
    found = []
    for match in re.finditer(r"(?s)\b([A-Za-z_]+)\s*\(([^()]*)\)", text):
        name = match.group(1).lower()
        if name in ("if", "endif", "else", "elseif", "include", "add_subdirectory", "set",
                    "message", "endforeach", "foreach"):
            continue
        found.append((name, match.group(2).split()))
    return found


def _keyword_args(arguments):
    """``TEST_NAME x CATEGORY c FACTS_DIR_NAMES a b NO_PREPROCESSOR`` -> dict of lists."""
    keys = {"TEST_NAME", "CATEGORY", "FACTS_DIR_NAMES", "FACTS_DIR_NAME", "EXTRA_DATA",
            "INCLUDE_DIRS", "NEGATIVE", "NO_PREPROCESSOR", "OUTPUT_STDOUT", "COMPILED",
            "COMPILED_SPLITTED", "MULTI_TEST", "FUNCTORS", "DEBUG_REPORT"}
    result, current = {}, None
    for word in arguments:
        if word in keys:
            current = word
            result.setdefault(word, [])
        elif current is not None:
            result[current].append(word)
    return result


def read_tests(souffle, categories=CATEGORIES):
    """Every test Soufflé's ``tests/<category>/CMakeLists.txt`` declares, interpreted once
    (Soufflé also runs most of them compiled; diffflow has one execution)."""
    tests = []
    for category in categories:
        folder = os.path.join(souffle, "tests", category)
        with open(os.path.join(folder, "CMakeLists.txt"), encoding="utf-8") as f:
            calls = _calls(f.read())
        for name, args in calls:
            if name in ("positive_test", "souffle_positive_test", "souffle_provenance_test"):
                tests.append(SoufflesTest(category, args[0]))
            elif name in ("negative_test", "souffle_negative_test"):
                tests.append(SoufflesTest(category, args[0], negative=True))
            elif name == "positive_output_stdout_test":
                tests.append(SoufflesTest(category, args[0], stdout_outputs=True))
            elif name in NOT_RUN_CALLS:
                tests.append(SoufflesTest(category, args[0], not_run=NOT_RUN_CALLS[name]))
            elif name in ("souffle_run_test", "souffle_run_test_helper",
                          "souffle_positive_multi_test"):
                kw = _keyword_args(args)
                test = SoufflesTest(category, kw["TEST_NAME"][0], negative="NEGATIVE" in kw,
                                    stdout_outputs="OUTPUT_STDOUT" in kw,
                                    include_dirs=kw.get("INCLUDE_DIRS", []),
                                    extra=(kw.get("EXTRA_DATA") or [""])[0])
                if test.extra == "sqlite3":
                    test.not_run = "sqlite3 outputs"
                if "FUNCTORS" in kw:
                    test.not_run = NOT_RUN_CALLS["souffle_positive_functor_test"]
                if "FACTS_DIR_NAMES" in kw:
                    for facts in kw["FACTS_DIR_NAMES"]:
                        tests.append(SoufflesTest(category, test.name, facts_dir=facts,
                                                  multi=True))
                else:
                    tests.append(test)
    for test in tests:
        if test.name in BROKEN:
            test.not_run = BROKEN[test.name]
    seen, unique = set(), []
    for test in tests:   # a test declared twice (e.g. interpreted and compiled) runs once
        key = (test.category, test.label)
        if key not in seen:
            seen.add(key)
            unique.append(test)
    return unique


def _sorted_rows(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        return sorted(line.rstrip() for line in f)


def run_test(test, souffle, diffflow, timeout):
    """Run one test; returns ``(outcome, reason, seconds, stderr_differs)`` with outcome
    ``pass``, ``fail``, ``timeout`` or ``not run``."""
    if test.not_run:
        return "not run", test.not_run, 0.0, False
    source = os.path.join(souffle, "tests", test.category, test.name)
    program = os.path.join(source, f"{test.name}.dl")
    expected_dir = os.path.join(source, test.facts_dir) if test.multi else source
    if not os.path.exists(program):
        return "not run", "no program file in the checkout", 0.0, False
    work = tempfile.mkdtemp(prefix=f"souffle-{test.label}-")
    try:
        command = [*diffflow, "run", "-D", "-" if test.stdout_outputs else ".",
                   "-F", os.path.join(source, test.facts_dir)]
        for include in test.include_dirs:
            command += ["-I", os.path.join(source, include)]
        command.append(program)
        stdin = None
        if test.category == "provenance":
            stdin = open(os.path.join(source, f"{test.name}.in"), encoding="utf-8")
        start = time.perf_counter()
        try:
            done = subprocess.run(command, cwd=work, stdin=stdin or subprocess.DEVNULL,
                                  capture_output=True, text=True, timeout=timeout,
                                  env={**os.environ, "NUMBA_NUM_THREADS": "1"})
        except subprocess.TimeoutExpired:
            return "timeout", f"no answer in {timeout} s", time.perf_counter() - start, False
        finally:
            if stdin:
                stdin.close()
        seconds = time.perf_counter() - start
        err_path = os.path.join(expected_dir if test.multi else source, f"{test.name}.err")
        expected_err = open(err_path, encoding="utf-8").read() if os.path.exists(err_path) else ""
        err_differs = done.stderr.strip() != expected_err.strip()
        if test.negative:
            if done.returncode != 0:
                return "pass", "", seconds, err_differs
            return "fail", "ran without an error where Soufflé reports one", seconds, err_differs
        if done.returncode != 0:
            lines = [ln for ln in done.stderr.strip().splitlines() if ln.strip()]
            last = next((ln for ln in lines if "error" in ln.lower()), lines[-1] if lines else "")
            return "fail", f"exit {done.returncode}: {last.strip()[:240]}", seconds, err_differs
        expected_csvs = sorted(n for n in os.listdir(expected_dir) if n.endswith(".csv"))
        produced = sorted(n for n in os.listdir(work) if n.endswith(".csv"))
        if len(produced) != len(expected_csvs):
            return ("fail", f"{len(produced)} csv files written, {len(expected_csvs)} expected "
                    f"({sorted(set(produced) ^ set(expected_csvs))})", seconds, err_differs)
        for name in expected_csvs:
            mine = os.path.join(work, name)
            if not os.path.exists(mine):
                return "fail", f"{name} not written", seconds, err_differs
            want, got = _sorted_rows(os.path.join(expected_dir, name)), _sorted_rows(mine)
            if want != got:
                extra = sorted(set(got) - set(want))[:2]
                lost = sorted(set(want) - set(got))[:2]
                return ("fail", f"{name}: {len(got)} rows, {len(want)} expected; "
                        f"extra {extra}, missing {lost}", seconds, err_differs)
        for name in sorted(n for n in os.listdir(work) if n.endswith(".gz.output")):
            # Soufflé's harness unzips a compressed output over its csv and compares that
            with gzip.open(os.path.join(work, name), "rt", encoding="utf-8") as f:
                got = sorted(line.rstrip() for line in f)
            csv = name[: -len(".gz.output")]
            if os.path.exists(os.path.join(expected_dir, csv)):
                if got != _sorted_rows(os.path.join(expected_dir, csv)):
                    return "fail", f"{name}: rows differ from {csv}", seconds, err_differs
        out_path = os.path.join(expected_dir if test.multi else source, f"{test.name}.out")
        if os.path.exists(out_path):
            want = [ln for ln in _sorted_rows(out_path)]
            got = sorted(line.rstrip() for line in done.stdout.splitlines())
            if want != got:
                extra = sorted(set(got) - set(want))[:2]
                lost = sorted(set(want) - set(got))[:2]
                return ("fail", f"stdout: {len(got)} lines, {len(want)} expected; "
                        f"extra {extra}, missing {lost}", seconds, err_differs)
        return "pass", "", seconds, err_differs
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--souffle", required=True,
                        help="a checkout of souffle-lang/souffle (its tests/ folder is read)")
    parser.add_argument("--category", action="append", choices=CATEGORIES,
                        help="only these test folders (repeatable; default all)")
    parser.add_argument("--only", nargs="+", metavar="TEST", help="only these tests")
    parser.add_argument("-j", "--jobs", type=int, default=2, help="tests run at once")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds per test")
    parser.add_argument("--diffflow", default=None,
                        help="the diffflow command (default: this Python's -m diffflow)")
    parser.add_argument("--json", metavar="FILE", help="write every test's outcome here")
    parser.add_argument("-v", "--verbose", action="store_true", help="list every failure")
    args = parser.parse_args(argv)
    souffle = os.path.expanduser(args.souffle)
    if args.jobs < 1 or args.timeout <= 0:
        parser.error("--jobs and --timeout must be positive")
    if not os.path.isdir(souffle):
        parser.error(f"--souffle {souffle}: no such folder; git clone "
                     "https://github.com/souffle-lang/souffle and pass its folder")
    if not os.path.isdir(os.path.join(souffle, "tests", "evaluation")):
        parser.error(f"{souffle} is not a checkout of souffle-lang/souffle (its tests "
                     "folder has no evaluation folder); git clone https://github.com/souffle-lang/"
                     "souffle and pass its folder")
    diffflow = args.diffflow.split() if args.diffflow else [sys.executable, "-m", "diffflow"]
    if shutil.which(diffflow[0]) is None:
        parser.error(f"--diffflow {args.diffflow}: {diffflow[0]} is not a program here")
    try:
        subprocess.run([*diffflow, "--help"], capture_output=True, check=True, timeout=120)
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired, OSError):
        parser.error(f"{' '.join(diffflow)} does not run diffflow; pip install -e . in this "
                     "checkout, or give --diffflow PATH/TO/diffflow")
    tests = read_tests(souffle, tuple(args.category or CATEGORIES))
    if args.only:
        unknown = set(args.only) - {t.name for t in tests} - {t.label for t in tests}
        if unknown:
            parser.error(f"--only: no such test in the folders asked: {', '.join(sorted(unknown))}")
        tests = [t for t in tests if t.name in args.only or t.label in args.only]
    results = {}
    started = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(max(1, args.jobs)) as pool:
        futures = {pool.submit(run_test, t, souffle, diffflow, args.timeout): t for t in tests}
        for future in concurrent.futures.as_completed(futures):
            test = futures[future]
            outcome, reason, seconds, err_differs = future.result()
            if outcome != "pass" and test.name in KEPT:
                outcome, reason = "kept", f"{KEPT[test.name]} ({reason})"
            results[test] = (outcome, reason, seconds, err_differs)
    classes = sorted({t.klass for t in tests}, key=lambda k: (CATEGORIES.index(k.split()[0]), k))
    print(f"{'class':<22}{'tests':>7}{'passed':>8}{'failed':>8}{'timeout':>9}{'kept':>6}"
          f"{'not run':>9}{'pass %':>8}   (pass % of the tests no kept difference affects)")
    totals = [0] * 6
    for klass in classes:
        mine = [results[t][0] for t in tests if t.klass == klass]
        counts = [len(mine)] + [mine.count(o) for o in ("pass", "fail", "timeout", "kept",
                                                         "not run")]
        totals = [a + b for a, b in zip(totals, counts)]
        judged = counts[1] + counts[2] + counts[3]
        print(f"{klass:<22}{counts[0]:>7}{counts[1]:>8}{counts[2]:>8}{counts[3]:>9}"
              f"{counts[4]:>6}{counts[5]:>9}{100 * counts[1] / max(judged, 1):>7.1f}%")
    judged = totals[1] + totals[2] + totals[3]
    print(f"{'all':<22}{totals[0]:>7}{totals[1]:>8}{totals[2]:>8}{totals[3]:>9}{totals[4]:>6}"
          f"{totals[5]:>9}{100 * totals[1] / max(judged, 1):>7.1f}%")
    print(f"({time.perf_counter() - started:.0f} s; stderr differs from Soufflé's on "
          f"{sum(1 for r in results.values() if r[3])} tests, not counted)")
    if args.verbose:
        for test in sorted(tests, key=lambda t: (t.klass, t.label)):
            outcome, reason, seconds, _ = results[test]
            if outcome != "pass":
                print(f"{outcome:<8} {test.klass:<20} {test.label:<32} {reason}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump([{"category": t.category, "class": t.klass, "test": t.label,
                        "outcome": results[t][0], "reason": results[t][1],
                        "seconds": round(results[t][2], 3), "stderr_differs": results[t][3]}
                       for t in tests], f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
