"""The Python tests' check framework, as tests/framework/check.h is the C tests': one
line per check ("PASS  name", "FAIL  name" with the traceback indented, "SKIP  name:
why"), and finish() prints the last line, "N passed, M failed[, K skipped]".

    from checks import check, equal, finish

    @check("what it shows")
    def _():
        equal(f(2), 4)          # an assertion failing fails the check; the others run
        return None             # or a string: skipped, and why

    finish()                    # exits 1 when any check failed
"""

import sys
import traceback

results = []  # True, False or None (skipped)


def check(name):
    def wrap(fn):
        try:
            skipped = fn()
            if skipped:
                print(f"SKIP  {name}: {skipped}")
                results.append(None)
            else:
                print(f"PASS  {name}")
                results.append(True)
        except Exception:  # noqa: BLE001 (any error fails this check, the others run)
            print(f"FAIL  {name}")
            for line in traceback.format_exc().splitlines():
                print(f"        {line}")
            results.append(False)
        return fn
    return wrap


def equal(got, want):
    assert got == want, f"got {got!r}, expected {want!r}"


def finish():
    passed, failed, skipped = results.count(True), results.count(False), results.count(None)
    print(f"{passed} passed, {failed} failed" + (f", {skipped} skipped" if skipped else ""))
    sys.exit(1 if failed else 0)
