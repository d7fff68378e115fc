# Slides, figures and their browser test, included by the Makefile.
#
# Decks are slides/NN-name.md (pandoc Markdown); every one found is rendered to
# build/slides/NN-name.html with reveal.js and KaTeX from slides/node_modules (the
# lockfile's versions, `npm ci` in slides/), copied beside the pages: they work with
# no network, opened as files or served. Figures are drawn by gnuplot from the
# measured runs in docs/figures/data/, one line of docs/figures/figures.list each.

SLIDES_DIR    := $(BUILD)/slides
SLIDES_MD     := $(sort $(wildcard slides/[0-9][0-9]-*.md))
SLIDES_HTML   := $(patsubst slides/%.md,$(SLIDES_DIR)/%.html,$(SLIDES_MD))
SLIDES_PDF    := $(patsubst slides/%.md,$(SLIDES_DIR)/pdf/%.pdf,$(SLIDES_MD))
SLIDES_NODE   := slides/node_modules
SLIDES_ASSETS := $(SLIDES_DIR)/lib/.copied
FIGURES_LIST  := docs/figures/figures.list
FIGURE_FILES  := $(wildcard docs/figures/*.svg docs/figures/*.png)
SLIDES_FIGS   := $(patsubst docs/figures/%,$(SLIDES_DIR)/figures/%,$(FIGURE_FILES))
CHROMIUM      ?= $(firstword $(shell command -v chromium chromium-browser 2>/dev/null))
METRICS       ?=
TIMELINE      ?=
STEP          ?=
# lesson 07's --timeline files, drawn by tools/figures/timeline.py (SVG only, no gnuplot)
FIGURE_TIMELINES := $(wildcard docs/figures/data/[0-9][0-9]-timeline-*.jsonl)
PLOT          ?=
# make gpu-report's report: make figures takes the GPU rows of the figures with gpu=ITEM from it
GPU_REPORT    ?= $(GPU_REPORT_DIR)/report.json
PLOT_OUT      ?= $(BUILD)/plots
NOTES         ?=

# What is missing, as one message each (empty when all is there).
need_pandoc = command -v pandoc >/dev/null || { echo "error: pandoc is not installed: sudo apt-get install pandoc (or sudo make deps); see slides/README.md" >&2; exit 1; }
need_node = test -d $(SLIDES_NODE)/reveal.js -a -d $(SLIDES_NODE)/katex || { echo "error: reveal.js and KaTeX are not installed in $(SLIDES_NODE): run make slides-deps (npm ci in slides/; needs Node.js 20+ and the npm registry once)" >&2; exit 1; }
need_chromium = test -n "$(CHROMIUM)" || { echo "error: Chromium is not installed: sudo apt-get install chromium (or sudo make deps)" >&2; exit 1; }

slides: ## render every deck for use without network: build/slides/index.html (pandoc, make slides-deps)
	@$(need_pandoc)
	@$(need_node)
	@$(MAKE) --no-print-directory $(SLIDES_ASSETS) $(SLIDES_FIGS) $(SLIDES_HTML)
	@$(PYTHON) tools/slides/index.py --out $(SLIDES_DIR)/index.html
	@echo "slides: open $(SLIDES_DIR)/index.html (works offline; copy the whole $(SLIDES_DIR)/ folder to move it)"

slides-deps: ## install reveal.js, KaTeX and the browser test's driver from slides/package-lock.json (npm ci)
	@if ! command -v npm >/dev/null; then \
	  echo "note: npm is not installed: slides cannot be rendered (Node.js 20+ with npm; see slides/README.md)"; \
	else cd slides && $(if $(SUDO_USER),sudo -u $(SUDO_USER) -H) npm ci --no-audit --no-fund; fi

deps: slides-deps

$(SLIDES_ASSETS): slides/package-lock.json slides/course.css
	@$(need_node)
	@rm -rf $(@D) && mkdir -p $(@D)/reveal.js $(@D)/katex
	cp -r $(SLIDES_NODE)/reveal.js/dist $(SLIDES_NODE)/reveal.js/plugin $(@D)/reveal.js/
	cp -r $(SLIDES_NODE)/katex/dist/katex.min.js $(SLIDES_NODE)/katex/dist/katex.min.css \
	      $(SLIDES_NODE)/katex/dist/fonts $(@D)/katex/
	cp slides/course.css $(@D)/
	@touch $@

$(SLIDES_DIR)/figures/%: docs/figures/%
	@mkdir -p $(@D)
	cp $< $@

$(SLIDES_DIR)/%.html: slides/%.md tools/slides/render-deck.sh $(SLIDES_ASSETS)
	@tools/slides/render-deck.sh $< $@

slides-pdf: slides ## every deck as a PDF in build/slides/pdf/ (headless Chromium; NOTES=1 adds the speaker notes)
	@$(need_chromium)
	@node tools/slides/print-pdf.mjs --chromium "$(CHROMIUM)" --out $(SLIDES_DIR)/pdf \
	  $(if $(filter 1 yes true,$(NOTES)),--notes) $(SLIDES_HTML)
	@$(PYTHON) tools/slides/index.py --out $(SLIDES_DIR)/index.html

check-slides: ## the decks against their lessons, then every slide in headless Chromium, offline
	@tests/slides/run.sh

figures: ## redraw docs/figures/*.svg and *.png from the measured runs in docs/figures/data/ (gnuplot; timelines: SVG), GPU ones from GPU_REPORT (make gpu-report's)
	@$(PYTHON) tools/figures/figures.py render $(FIGURES_LIST) $(if $(wildcard $(GPU_REPORT)),--gpu-report $(GPU_REPORT))
	@for t in $(FIGURE_TIMELINES); do \
	  $(PYTHON) tools/figures/timeline.py "$$t" --out docs/figures/$$(basename "$$t" .jsonl).svg || exit 1; done

timeline: ## draw a pipeline step: make timeline TIMELINE=file.jsonl [STEP=N] (lesson 07's --timeline; build/plots/NAME.svg)
	@test -n "$(TIMELINE)" || { echo "error: give the timeline: make timeline TIMELINE=timeline.jsonl (lesson 07's --timeline FILE)" >&2; exit 1; }
	@$(PYTHON) tools/figures/timeline.py $(TIMELINE) $(if $(STEP),--step $(STEP)) \
	  --out $(PLOT_OUT)/$(basename $(notdir $(TIMELINE))).svg

trace: ## where a step's time goes: make trace TRACE="run.rank*.json" [STEP=N] (a program's --trace files; merged and drawn in build/plots/)
	@test -n "$(TRACE)" || { echo "error: give the trace files: make trace TRACE=\"run.rank*.json\" (a program's --trace run.json writes one per rank)" >&2; exit 1; }
	@n=$$(basename "$(firstword $(wildcard $(TRACE)) $(TRACE))" .json); n=$${n%.rank*}; \
	$(PYTHON) tools/trace/trace.py $(TRACE) $(if $(STEP),--step $(STEP)) --merged $(PLOT_OUT)/$$n.json --svg $(PLOT_OUT)/$$n.svg

plot: ## plot your own runs: make plot METRICS="a.jsonl [b.jsonl ...]" [PLOT="kind=xy x=step y=mean_return"] (build/plots/)
	@test -n "$(METRICS)" || { echo "error: give the metrics file: make plot METRICS=run.jsonl (a program's --metrics FILE)" >&2; exit 1; }
	@$(PYTHON) tools/figures/figures.py plot $(METRICS) $(PLOT) --out $(PLOT_OUT)

.PHONY: slides slides-deps slides-pdf check-slides figures plot timeline trace
