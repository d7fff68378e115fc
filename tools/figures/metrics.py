"""Reading what figures are drawn from: JSON-lines metrics, their .source sidecar
(machine, date, command), and the list of figure specs (docs/figures/figures.list).

Every problem is raised as FigureError with the file, the line and how to fix it."""

import json
import os
import shlex
import sys
import time

KINDS = ("epochs", "bars", "xy", "roofline")
SOURCE_FIELDS = ("machine", "date", "command")


class FigureError(Exception):
    pass


def read_jsonl(path):
    """The objects of a JSON-lines file, in order: [ {key: value} ]."""
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.readlines()
    except OSError as e:
        raise FigureError(f"{path}: cannot read it ({e.strerror})") from None
    rows = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as e:
            if number == len(lines) and not line.endswith("\n"):
                # a run still writing (or killed while writing): plot what is complete
                print(f"{path}:{number}: the last line is unfinished; left out", file=sys.stderr)
                continue
            raise FigureError(f"{path}:{number}: not a JSON object ({e.msg}); "
                              "each line must be one object, as --metrics FILE writes") from None
        if not isinstance(row, dict):
            raise FigureError(f"{path}:{number}: a JSON {type(row).__name__}, not an object")
        rows.append(row)
    if not rows:
        raise FigureError(f"{path}: no metrics in it (empty file: did the run finish an epoch?)")
    return rows


def source_path(data_path):
    base = data_path[:-len(".jsonl")] if data_path.endswith(".jsonl") else data_path
    return base + ".source"


def read_source(data_path, required=True):
    """The sidecar of a data file: {"machine": ..., "date": ..., "command": ...}.
    Without one (required=False: a participant's own run) a description of the
    file itself stands in."""
    path = source_path(data_path)
    if not os.path.exists(path):
        if required:
            raise FigureError(
                f"{data_path}: no {os.path.basename(path)} beside it saying machine, date and "
                "command; record runs with tools/figures/record.sh (docs/figures/README.md)")
        written = time.strftime("%Y-%m-%d %H:%M", time.localtime(os.path.getmtime(data_path)))
        return {"text": f"From {data_path}, written {written}; the machine and the command "
                        "were not recorded (tools/figures/record.sh records them)."}
    fields = {}
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if not line.strip() or line.startswith("#"):
                continue
            key, sep, value = line.partition(":")
            if not sep:
                raise FigureError(f"{path}:{number}: expected 'key: value', got {line.strip()!r}")
            fields[key.strip()] = value.strip()
    fields.pop("text", None)  # reserved for the footer of a run without a sidecar
    missing = [k for k in SOURCE_FIELDS if not fields.get(k)]
    if missing:
        raise FigureError(f"{path}: no {', '.join(missing)}: a figure must name the machine, "
                          "the date and the command that measured it")
    return fields


def read_specs(path):
    """The figure specs: [ {"name", "kind", "data", "options": {key: value}, "line"} ]."""
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.readlines()
    except OSError as e:
        raise FigureError(f"{path}: cannot read it ({e.strerror})") from None
    specs, names = [], set()
    for number, line in enumerate(lines, 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        where = f"{path}:{number}"
        try:
            words = shlex.split(line)
        except ValueError as e:
            raise FigureError(f"{where}: {e} (quote values with spaces: title=\"...\")") from None
        if len(words) < 3:
            raise FigureError(f"{where}: expected NAME KIND DATA [key=value ...], got {line.strip()!r}")
        name, kind, data = words[:3]
        if kind not in KINDS:
            raise FigureError(f"{where}: unknown kind {kind!r} (kinds: {', '.join(KINDS)})")
        if name in names:
            raise FigureError(f"{where}: a second figure named {name!r}")
        names.add(name)
        options = {}
        for word in words[3:]:
            key, sep, value = word.partition("=")
            if not sep:
                options[key] = "yes"  # a flag: logx, logy
            else:
                options[key] = value
        specs.append({"name": name, "kind": kind, "data": data, "options": options, "line": where})
    return specs


def numeric(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)
