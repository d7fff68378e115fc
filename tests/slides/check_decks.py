#!/usr/bin/env python3
"""Checks every deck (slides/NN-name.md) against its lesson (course/NN-name/) and the
figures against their data, without a browser:

  - each TODO N.k on a slide ('TODO 1.6', 'TODO 0.3, 0.4', or a row of a table whose
    first column is headed TODO) exists in lesson N: a '## TODO N.k' section in its
    README.md and the TODO in its code; the files a TODO's table row names are the
    README's files for it and mention it; the identifiers in backticks on that row
    occur in the lesson's code
  - the other way round: every '## TODO N.k' of the deck's own lesson is on the deck
  - every '##' slide has speaker notes (a '::: notes' div)
  - every figure a deck shows is in docs/figures/
  - every figure of docs/figures/figures.list is drawn (SVG and PNG), and its data
    has a .source naming the machine, the date and the command

  tests/slides/check_decks.py [slides/NN-name.md ...]

One line per check (PASS/FAIL, reasons below a FAIL), then "N passed, M failed"."""

import glob
import os
import re
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tools", "figures"))
from metrics import FigureError, read_jsonl, read_source, read_specs  # noqa: E402

TODO_ID = r"\d+\.\d+"
# 'TODO 1.6', 'TODO 0.3, 0.4', 'TODO 1.1 and 1.2', 'TODOs 3.1-3.5' is not supported
TODO_MENTION = re.compile(rf"\bTODO\s+({TODO_ID}(?:\s*(?:,|and|&)\s*{TODO_ID})*)")
CODE_EXTENSIONS = (".c", ".cu", ".h", ".sbatch", ".conf", ".sh")  # a TODO may be in the job script or a recipe


class Results:
    def __init__(self):
        self.passed = self.failed = 0

    def report(self, name, problems):
        if problems:
            self.failed += 1
            print(f"FAIL  {name}")
            for p in problems[:20]:
                print(f"        {p}")
            if len(problems) > 20:
                print(f"        ... and {len(problems) - 20} more")
        else:
            self.passed += 1
            print(f"PASS  {name}")


def ids_in(text):
    return re.findall(TODO_ID, text)


def deck_lines(path):
    """[(line number, text, inside a fenced code block)], the YAML header left out."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    out, fenced, start = [], False, 0
    if lines and lines[0].strip() == "---":
        for i in range(1, len(lines)):
            if lines[i].strip() in ("---", "..."):
                start = i + 1
                break
    for number in range(start, len(lines)):
        line = lines[number]
        if re.match(r"^(```|~~~)", line):
            fenced = not fenced
            out.append((number + 1, line, True))
        else:
            out.append((number + 1, line, fenced))
    return out


def todo_mentions(lines):
    """{id: first line number}, and [(line, ids, row text)] for TODO table rows."""
    mentions, rows, todo_table = {}, [], False
    for number, line, fenced in lines:
        if fenced:
            continue
        for group in TODO_MENTION.findall(line):
            for todo in ids_in(group):
                mentions.setdefault(todo, number)
        if line.lstrip().startswith("|"):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if re.fullmatch(r":?-+:?", cells[0] or "-"):
                continue
            if cells[0] == "TODO":
                todo_table = True
                continue
            if todo_table and re.fullmatch(rf"(TODO\s+)?{TODO_ID}(\s*,\s*{TODO_ID})*", cells[0]):
                todos = ids_in(cells[0])
                for todo in todos:
                    mentions.setdefault(todo, number)
                rows.append((number, todos, line))
        else:
            todo_table = False
    return mentions, rows


class Lesson:
    """A lesson's README sections and code, as the checks need them."""

    def __init__(self, directory):
        self.dir = directory
        self.name = os.path.basename(directory)
        with open(os.path.join(directory, "README.md"), encoding="utf-8") as f:
            readme = f.read()
        self.sections = {}  # id -> text of its section
        parts = re.split(rf"^## TODO ({TODO_ID})\s*$", readme, flags=re.M)
        for i in range(1, len(parts), 2):
            self.sections[parts[i]] = parts[i + 1].split("\n## ")[0]
        self.code = {}
        for path in sorted(glob.glob(os.path.join(directory, "*"))):
            if path.endswith(CODE_EXTENSIONS):
                with open(path, encoding="utf-8") as f:
                    self.code[os.path.basename(path)] = f.read()

    def files_with(self, todo):
        pattern = re.compile(rf"TODO[ _]?(?:STOP\(\")?\s*{re.escape(todo)}(?!\d)|"
                             rf"TODO\s+(?:{TODO_ID}\s*(?:,|and)\s*)+{re.escape(todo)}(?!\d)")
        return {name for name, text in self.code.items() if pattern.search(text)}

    def readme_files(self, todo):
        """The files the README's section names for a TODO (in its first paragraph)."""
        first = self.sections.get(todo, "").strip().split("\n\n")[0]
        return set(re.findall(r"`([\w.-]+\.(?:c|cu|h))`", first))


def lesson_for(number, cache):
    if number not in cache:
        found = sorted(glob.glob(os.path.join(ROOT, "course", f"{int(number):02d}-*")))
        cache[number] = Lesson(found[0]) if found and os.path.exists(
            os.path.join(found[0], "README.md")) else None
    return cache[number]


def check_todos(deck, lines, lessons):
    problems = []
    own_number = os.path.basename(deck)[:2]
    own = lesson_for(own_number, lessons)
    if own is None:
        return [f"there is no lesson course/{own_number}-*/ (with a README.md) for this deck"]
    mentions, rows = todo_mentions(lines)
    for todo, number in sorted(mentions.items()):
        lesson = lesson_for(todo.split(".")[0], lessons)
        where = f"{os.path.relpath(deck, ROOT)}:{number}: TODO {todo}"
        if lesson is None:
            problems.append(f"{where}: there is no lesson {todo.split('.')[0]} in course/")
            continue
        if todo not in lesson.sections:
            problems.append(f"{where}: course/{lesson.name}/README.md has no section '## TODO {todo}'")
        if not lesson.files_with(todo):
            problems.append(f"{where}: no file of course/{lesson.name}/ mentions TODO {todo}")
    for number, todos, row in rows:
        files = set(re.findall(r"`([\w.-]+\.(?:c|cu|h))`", row))
        names = set(re.findall(r"`([A-Za-z_]\w*)`", row))
        for todo in todos:
            lesson = lesson_for(todo.split(".")[0], lessons)
            if lesson is None or todo not in lesson.sections:
                continue
            where = f"{os.path.relpath(deck, ROOT)}:{number}: TODO {todo}"
            readme_files = lesson.readme_files(todo)
            for f in sorted(files):
                if f not in lesson.code:
                    problems.append(f"{where}: names {f}, which course/{lesson.name}/ does not have")
                elif readme_files and f not in readme_files:
                    problems.append(f"{where}: names {f}, but the README's section names "
                                    f"{', '.join(sorted(readme_files))}")
                elif f not in lesson.files_with(todo):
                    problems.append(f"{where}: names {f}, which does not mention TODO {todo}")
            for name in sorted(names):
                if not any(re.search(rf"\b{re.escape(name)}\b", t) for t in lesson.code.values()):
                    problems.append(f"{where}: `{name}` does not occur in course/{lesson.name}/'s code")
    for todo in sorted(own.sections, key=lambda t: [int(x) for x in t.split(".")]):
        if todo not in mentions:
            problems.append(f"{os.path.relpath(deck, ROOT)}: course/{own.name}/README.md has "
                            f"'## TODO {todo}', but no slide mentions TODO {todo}")
    return problems


def check_notes(deck, lines):
    """Every '##' slide has a non-empty '::: notes' div before the next heading."""
    problems, slide, has_notes, in_notes, note_text = [], None, False, False, ""

    def close():
        if slide and not (has_notes and note_text.strip()):
            problems.append(f"{os.path.relpath(deck, ROOT)}:{slide[0]}: slide '{slide[1]}' has no "
                            "speaker notes (add a '::: notes' ... ':::' div to it)")

    for number, line, fenced in lines:
        if fenced:
            if in_notes:
                note_text += line
            continue
        if re.match(r"^#{1,2} ", line):
            close()
            slide = (number, line.lstrip("# ").strip()) if line.startswith("## ") else None
            has_notes, in_notes, note_text = False, False, ""
        elif re.match(r"^:::+\s*(\{\s*)?\.?notes\s*\}?\s*$", line):
            has_notes, in_notes = True, True
        elif in_notes and re.match(r"^:::+\s*$", line):
            in_notes = False
        elif in_notes:
            note_text += line
    close()
    return problems


def check_figures_used(deck, lines):
    problems = []
    for number, line, fenced in lines:
        if fenced:
            continue
        for path in re.findall(r"!\[[^\]]*\]\(([^) ]+)", line):
            where = f"{os.path.relpath(deck, ROOT)}:{number}"
            if not path.startswith("figures/"):
                problems.append(f"{where}: image {path}: figures come from docs/figures/ (figures/NAME.svg)")
            elif not os.path.exists(os.path.join(ROOT, "docs", path)):
                problems.append(f"{where}: figure {path}: docs/{path} does not exist (make figures)")
    return problems


def check_figure_list():
    list_path = os.path.join("docs", "figures", "figures.list")  # relative: for the messages
    problems = []
    try:
        specs = read_specs(list_path)
    except FigureError as e:
        return [str(e)], 0
    for spec in specs:
        data = os.path.join(os.path.dirname(list_path), "data", spec["data"])
        try:
            read_jsonl(data)
            read_source(data)
        except FigureError as e:
            problems.append(f"{spec['line']}: {e}")
        for ext in ("svg", "png"):
            if not os.path.exists(os.path.join(ROOT, "docs", "figures", f"{spec['name']}.{ext}")):
                problems.append(f"{spec['line']}: docs/figures/{spec['name']}.{ext} is not drawn "
                                "(make figures, then commit it)")
    return problems, len(specs)


def main():
    os.chdir(ROOT)
    decks = [os.path.abspath(d) for d in sys.argv[1:]] or sorted(
        glob.glob(os.path.join(ROOT, "slides", "[0-9][0-9]-*.md")))
    results, lessons = Results(), {}
    for deck in decks:
        name = os.path.basename(deck)[:-3]
        lines = deck_lines(deck)
        results.report(f"{name}: every TODO on a slide is in its lesson's README and code, and "
                       "every TODO of the lesson is on a slide", check_todos(deck, lines, lessons))
        results.report(f"{name}: speaker notes on every '##' slide", check_notes(deck, lines))
        results.report(f"{name}: every figure it shows is in docs/figures/",
                       check_figures_used(deck, lines))
    problems, count = check_figure_list()
    results.report(f"docs/figures: all {count} figures of figures.list drawn, each from data "
                   "that names machine, date and command", problems)
    print(f"{results.passed} passed, {results.failed} failed")
    return 1 if results.failed else 0


if __name__ == "__main__":
    sys.exit(main())
