// Command progresstoken is a progress consumer module for the runner's
// tests: it fails a notification without a progressToken, and otherwise
// stops (cancels) the request at its second step, so that a test can tell
// from the error which it saw.
package main

import (
	"github.com/snodo/snodo/abi/guest"
)

func init() {
	guest.SetName("progresstoken")
	guest.HandleProgress(func(ctx guest.Context, p guest.Progress) (guest.Action, error) {
		if len(p.ProgressToken) == 0 || string(p.ProgressToken) == "null" {
			return guest.Continue, &guest.Error{Code: -32051, Message: "a notification without its progressToken"}
		}
		if p.Progress >= 2 {
			return guest.Stop, nil
		}
		return guest.Continue, nil
	})
}

func main() {}
