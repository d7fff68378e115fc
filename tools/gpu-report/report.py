"""The GPU report (make gpu-report): what an item's output says, and the report itself,
written as Markdown for people and as JSON for programs (make figures reads it).

An item's counts come from the output of the project's test programs: the last
"N passed, M failed[, K skipped]" line, or, where a program was killed before it printed
one, its PASS/FAIL/SKIP lines counted. compute-sanitizer's summaries ("ERROR SUMMARY: N
errors", "RACECHECK SUMMARY: N hazards displayed (E errors, W warnings)") are added up
over the processes it watched (check_gpu runs each check in a child process)."""

import json
import re

RESULT_LINE = re.compile(r"^(\d+) passed, (\d+) failed(?:, (\d+) skipped)?")
VERDICT_LINE = re.compile(r"^(PASS|FAIL|SKIP)  ")
ERROR_SUMMARY = re.compile(r"^=+ ERROR SUMMARY: (\d+) errors?")
RACE_SUMMARY = re.compile(r"^=+ RACECHECK SUMMARY: (\d+) hazards? displayed \((\d+) errors?, (\d+) warnings?\)")
TAIL_LINES = 15


def counts(text):
    """{"passed", "failed", "skipped", "from"} of a test program's output, or None when
    it printed neither a result line nor a verdict line."""
    lines = text.splitlines()
    for line in reversed(lines):
        m = RESULT_LINE.match(line)
        if m:
            return {"passed": int(m[1]), "failed": int(m[2]), "skipped": int(m[3] or 0),
                    "from": "result line"}
    verdicts = [m[1] for m in map(VERDICT_LINE.match, lines) if m]
    if not verdicts:
        return None
    return {"passed": verdicts.count("PASS"), "failed": verdicts.count("FAIL"),
            "skipped": verdicts.count("SKIP"), "from": "PASS/FAIL/SKIP lines (no result line)"}


def verdicts(text):
    """The PASS/FAIL/SKIP lines of an item's output, each with what it matched and by how
    much (the multi-GPU items' comparisons say so on the line)."""
    return [line for line in text.splitlines() if VERDICT_LINE.match(line)]


def sanitizer_summary(text):
    """{"errors", "processes"} over compute-sanitizer's summary lines, or None without any."""
    errors = processes = 0
    for line in text.splitlines():
        m = ERROR_SUMMARY.match(line)
        r = RACE_SUMMARY.match(line)
        if m:
            errors, processes = errors + int(m[1]), processes + 1
        elif r:
            errors, processes = errors + int(r[2]), processes + 1
    return {"errors": errors, "processes": processes} if processes else None


def tail(text, n=TAIL_LINES):
    return text.rstrip("\n").splitlines()[-n:]


def judge(item, text, exit_status, timed_out):
    """Fills in an item that ran: its counts, sanitizer errors, last lines and status.
    An item fails on a timeout, a non-zero exit, a failed check, a sanitizer error, or
    fewer passed checks than it must show (min_passed: a selection that ran nothing), or
    a skipped check where none may skip (no_skips: on a GPU, every check of check_gpu and
    of lessons 00 and 02 runs)."""
    c = counts(text)
    s = sanitizer_summary(text)
    item.update(exit_status=exit_status, counts=c, sanitizer=s, tail=tail(text), checks=verdicts(text))
    reasons = []
    cut = timed_out and item.get("budget_cut")
    if cut:
        reasons.append(f"stopped at the report's budget after {item['timeout_s']} s, before its own limit")
    elif timed_out:
        reasons.append(f"stopped after its limit of {item['timeout_s']} s")
    elif exit_status != 0:
        reasons.append(f"exit status {exit_status}")
    if c and c["failed"]:
        reasons.append(f"{c['failed']} failed")
    if s and s["errors"]:
        reasons.append(f"{s['errors']} sanitizer errors")
    if item.get("min_passed") and (not c or c["passed"] < item["min_passed"]):
        reasons.append("no check passed" if item["min_passed"] == 1
                       else f"fewer than {item['min_passed']} checks passed")
    if item.get("no_skips") and c and c["skipped"]:
        reasons.append(f"{c['skipped']} skipped (on a GPU every one of its checks runs)")
    if item.get("needs_sanitizer_summary") and not s and not timed_out:
        reasons.append("no sanitizer summary in its output")
    item["status"] = ("cut short" if cut else "timed out" if timed_out
                      else "failed" if reasons else "passed")
    item["why"] = "; ".join(reasons)
    return item


def not_run(item, why):
    item.update(status="not run", why=why, exit_status=None, seconds=None, counts=None,
                sanitizer=None, tail=[], checks=[])
    return item


def summary(items):
    s = {"passed": 0, "failed": 0, "timed out": 0, "cut short": 0, "not run": 0}
    for it in items:
        s[it["status"]] += 1
    return s


def counts_cell(it):
    c, s = it.get("counts"), it.get("sanitizer")
    parts = []
    if c:
        parts.append(f"{c['passed']} / {c['failed']} / {c['skipped']}")
    if s:
        parts.append(f"{s['errors']} sanitizer errors in {s['processes']} processes")
    return "; ".join(parts) or "-"


def cell(text):
    return str(text).replace("|", "\\|").replace("\n", " ")


def gpu_rows(g):
    """The header's rows on the GPUs the multi-GPU items used (gpu-report.py's gpus_of)."""
    if not g:
        return []
    nccl = g.get("nccl") or {}
    return [("GPUs", g["description"]),
            ("interconnect", g.get("interconnect") or "-"),
            ("NCCL", (nccl.get("version") or "?") + (f"; {nccl['path']}" if nccl.get("path") else "")
             if nccl else "- (the nccl item did not run)"),
            ("launcher", g.get("launcher") or "-")]


def markdown(report):
    d = report["device"]
    s = report["summary"]
    out = [f"# GPU report: {d.get('name') or report['mode'].split(':')[0]}, {report['date']}", ""]
    out += ["| | |", "| --- | --- |"]
    rows = [("mode", report["mode"]),
            ("device", d.get("description", "none")),
            ("driver", d.get("driver", "-")),
            ("CUDA", d.get("cuda", "-")),
            ("host", report["host"]),
            *gpu_rows(report.get("gpus")),
            ("date", report["date"] + " (UTC)"),
            ("commit", report["commit"]),
            ("build", report["build"]),
            ("budget", f"{report['budget_s']} s; the items took {report['seconds']:.0f} s"),
            ("result", f"{s['passed']} passed, {s['failed'] + s['timed out']} failed, "
                       f"{s['cut short']} cut short by the budget, {s['not run']} not run")]
    rows += [("note", n) for n in report["notes"]]
    out += [f"| {k} | {cell(v)} |" for k, v in rows]
    out += ["", "| item | status | exit | seconds | checks passed / failed / skipped | why |",
            "| --- | --- | ---: | ---: | --- | --- |"]
    for it in report["items"]:
        secs = "-" if it["seconds"] is None else f"{it['seconds']:.1f}"
        exit_status = "-" if it["exit_status"] is None else it["exit_status"]
        out.append(f"| {it['id']} | {it['status']} | {exit_status} | {secs} | "
                   f"{cell(counts_cell(it))} | {cell(it['why'])} |")
    for it in report["items"]:
        out += ["", f"## {it['id']}: {it['title']}", ""]
        out.append(f"**{it['status']}**" + (f": {it['why']}" if it["why"] else "") +
                   f" (limit {it['timeout_s']} s; {it['estimate']})")
        if it.get("note"):
            out += ["", it["note"]]
        if it.get("stand_in"):
            out += ["", f"Data: {it['stand_in']}."]
        out += ["", "```", it["command"], "```"]
        if it.get("checks") and len(it["checks"]) <= 60:
            out += ["", "Checks:", ""] + [f"- {cell(line)}" for line in it["checks"]]
        if it["tail"] and (it["status"] != "passed" or not it.get("checks")):
            out += ["", "Last lines:", "", "```"] + it["tail"] + ["```"]
        if it.get("metrics"):
            files = ", ".join(f"{name} ({len(rows)} lines)" for name, rows in it["metrics"].items())
            out += ["", f"Metrics (in report.json): {files}"]
    return "\n".join(out) + "\n"


def write(report, md_path, json_path):
    with open(json_path, "w", encoding="utf-8") as f:
        json.dump(report, f, indent=1)
        f.write("\n")
    with open(md_path, "w", encoding="utf-8") as f:
        f.write(markdown(report))
