package main

import (
	"os"
	"sync"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/snodo/snodo"
)

// progressView shows a call's progress: a live bar with the server's
// message when stderr is a terminal, otherwise one log line per
// notification with --verbose, otherwise nothing.
type progressView struct {
	mu  sync.Mutex
	bar *progressbar.ProgressBar
}

// progressDisplay returns the function that shows progress, or nil when
// nothing is shown. A --progress module takes precedence (the runtime
// ignores the display then).
func (a *app) progressDisplay() func(snodo.Progress) {
	f, ok := a.stderr.(*os.File)
	if g, isGated := a.stderr.(interface{ File() *os.File }); isGated {
		f, ok = g.File(), true
	}
	if ok && term.IsTerminal(int(f.Fd())) {
		a.progress = &progressView{}
		return a.progress.showBar(f)
	}
	if a.settings.verbose {
		return func(p snodo.Progress) {
			args := []any{"progress", p.Progress}
			if p.Total != nil {
				args = append(args, "total", *p.Total)
			}
			if p.Message != "" {
				args = append(args, "message", p.Message)
			}
			a.logger.Info("progress", args...)
		}
	}
	return nil
}

func (v *progressView) showBar(f *os.File) func(snodo.Progress) {
	return func(p snodo.Progress) {
		v.mu.Lock()
		defer v.mu.Unlock()
		const scale = 1000 // progress may be fractional
		max := int64(-1)
		if p.Total != nil && *p.Total > 0 {
			max = int64(*p.Total * scale)
		}
		if v.bar == nil {
			v.bar = newBar(f, max)
		} else if max > 0 && max != v.bar.GetMax64() {
			v.bar.ChangeMax64(max)
		}
		v.update(p.Message, int64(p.Progress*scale))
	}
}

// newBar is the bar drawn on f: max -1 is a spinner.
func newBar(f *os.File, max int64) *progressbar.ProgressBar {
	return progressbar.NewOptions64(max,
		progressbar.OptionSetWriter(f),
		progressbar.OptionSetWidth(30),
		progressbar.OptionShowElapsedTimeOnFinish(),
		progressbar.OptionSetPredictTime(false),
		progressbar.OptionSpinnerType(14),
	)
}

// update shows the message and the value in one frame. The bar's Describe
// draws at once, with the value before Set64's: the text would run a step
// ahead of the bar. With a known total (no spinner redrawing on its own),
// the description is set without drawing, and Set64 draws both; when the
// value does not change, Describe draws. The bar is not cleared when it
// reaches its total, so that 100% shows until endProgress.
func (v *progressView) update(message string, value int64) {
	message = oneLineSafe(message)
	if v.bar.GetMax64() > 0 && value != int64(v.bar.State().CurrentNum) {
		progressbar.OptionSetDescription(message)(v.bar)
		_ = v.bar.Set64(value)
		return
	}
	v.bar.Describe(message)
	_ = v.bar.Set64(value)
}

// endProgress clears the bar, if one was shown, where it stands: a call
// that ended before its progress did (Ctrl-C, an error) does not show 100%
// on its way out. Finish stops the spinner's redrawing; with
// clear-on-finish it draws nothing.
func (a *app) endProgress() {
	if a.progress == nil {
		return
	}
	a.progress.mu.Lock()
	defer a.progress.mu.Unlock()
	if a.progress.bar != nil {
		progressbar.OptionClearOnFinish()(a.progress.bar)
		_ = a.progress.bar.Finish()
		_ = a.progress.bar.Clear()
	}
}
