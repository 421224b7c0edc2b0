// Command testkit is a Snodo handler module for snodo-run's tests: it
// answers roots/list with the roots of its configuration and consumes
// progress, asking to cancel the request once progress reaches
// "cancelAt" (never when 0).
//
//	{"roots": [{"uri": "file:///work", "name": "work"}], "cancelAt": 3}
//
// Build: GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o testkit.wasm .
package main

import "github.com/snodo/snodo/abi/guest"

type config struct {
	Roots    []guest.Root `json:"roots"`
	CancelAt float64      `json:"cancelAt"`
}

var cfg config

func init() {
	guest.SetName("testkit")
	_ = guest.Config(&cfg)
	guest.HandleRoots(func(ctx guest.Context, _ guest.RootsRequest) (guest.RootsResult, error) {
		roots := cfg.Roots
		if roots == nil {
			roots = []guest.Root{}
		}
		return guest.RootsResult{Roots: roots}, nil
	})
	guest.HandleProgress(func(ctx guest.Context, p guest.Progress) (guest.Action, error) {
		ctx.Infof("progress %v: %s", p.Progress, p.Message)
		if cfg.CancelAt > 0 && p.Progress >= cfg.CancelAt {
			return guest.Stop, nil
		}
		return guest.Continue, nil
	})
}

func main() {}
