// Command answer is the benchmark's Go Wasm handler module: it accepts every
// elicitation/create form with the request's message as the answer field,
// as the native handlers of the benchmark clients do.
//
// Build: GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o answer.wasm .
package main

import "github.com/snodo/snodo/abi/guest"

func init() {
	guest.SetName("bench-answer")
	guest.HandleElicitation(func(ctx guest.Context, req guest.ElicitRequest) (guest.ElicitResult, error) {
		return guest.ElicitResult{Action: guest.Accept, Content: guest.Fields{guest.String("answer", req.Message)}}, nil
	})
}

func main() {}
