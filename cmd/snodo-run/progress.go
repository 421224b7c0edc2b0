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
			v.bar = progressbar.NewOptions64(max,
				progressbar.OptionSetWriter(f),
				progressbar.OptionSetWidth(30),
				progressbar.OptionShowElapsedTimeOnFinish(),
				progressbar.OptionClearOnFinish(),
				progressbar.OptionSetPredictTime(false),
				progressbar.OptionSpinnerType(14),
			)
		} else if max > 0 && max != v.bar.GetMax64() {
			v.bar.ChangeMax64(max)
		}
		v.bar.Describe(p.Message)
		_ = v.bar.Set64(int64(p.Progress * scale))
	}
}

// endProgress clears the bar, if one was shown.
func (a *app) endProgress() {
	if a.progress == nil {
		return
	}
	a.progress.mu.Lock()
	defer a.progress.mu.Unlock()
	if a.progress.bar != nil {
		_ = a.progress.bar.Finish()
		_ = a.progress.bar.Clear()
	}
}
