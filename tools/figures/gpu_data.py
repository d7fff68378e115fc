"""GPU numbers for the figures from make gpu-report's report.json.

A figure whose line in figures.list says gpu=ITEM (or gpu=ITEM/FILE, when the item wrote
several metrics files) takes its data from that item of the report, when the report is
there, the item passed on a GPU with the lessons' real data, and the report is not older
than the figure's data: its rows replace data/DATA and a .source written from the report
(device, host, date, command, commit) replaces DATA's, so that the data committed beside
the figure is what it shows. Otherwise the data stays as it is."""

import json
import os

from metrics import FigureError, read_source, source_path


def read_report(path):
    try:
        with open(path, encoding="utf-8") as f:
            rep = json.load(f)
    except OSError as e:
        raise FigureError(f"{path}: cannot read it ({e.strerror})") from None
    except json.JSONDecodeError as e:
        raise FigureError(f"{path}: not a GPU report ({e.msg}); make gpu-report writes one") from None
    if not isinstance(rep, dict) or rep.get("report") != 1 or "items" not in rep:
        raise FigureError(f"{path}: not a GPU report (make gpu-report writes one)")
    return rep


def report_rows(rep, wanted):
    """(rows, item) of gpu=ITEM[/FILE], or (None, why they cannot be used)."""
    item_id, _, file = wanted.partition("/")
    item = next((it for it in rep["items"] if it["id"] == item_id), None)
    if item is None:
        return None, f"the report has no item {item_id}"
    if rep.get("mode") != "GPU":
        return None, f"the report's mode is '{rep.get('mode')}', not a GPU run"
    if item["status"] != "passed":
        return None, f"{item_id} {item['status']}" + (f": {item['why']}" if item.get("why") else "")
    if item.get("stand_in"):
        return None, f"{item_id} ran on stand-in data ({item['stand_in']})"
    metrics = item.get("metrics") or {}
    if not file and len(metrics) == 1:
        file = next(iter(metrics))
    rows = metrics.get(file)
    if not rows:
        return None, f"{item_id} recorded no metrics{' in ' + file if file else ''}"
    return rows, item


def take(report_path, wanted, data_path):
    """Replaces data_path (and its .source) by the report's rows when they can be used;
    returns one line saying what was done."""
    rep = read_report(report_path)
    rows, item = report_rows(rep, wanted)
    if rows is None:
        return f"data kept, not the GPU report's: {item}"
    date = rep["date"][:10]
    if os.path.exists(source_path(data_path)):
        old = read_source(data_path).get("date", "")
        if old > date:
            return f"data kept: it is from {old}, the GPU report from {date}"
    device = rep["device"]
    with open(data_path, "w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row) + "\n")
    with open(source_path(data_path), "w", encoding="utf-8") as f:
        f.write(f"machine: {device.get('description', device.get('name'))}; driver "
                f"{device.get('driver')}; host: {rep['host']}\n")
        f.write(f"date: {date}\n")
        f.write(f"command: make gpu-report (its item {item['id']}: {item['command']})\n")
        f.write(f"commit: {rep['commit']}\n")
        f.write(f"note: from {report_path}\n")
    return f"data from the GPU report of {date} ({device.get('name')}, item {item['id']})"
