// Command sampling-echo is a Snodo handler module that answers
// sampling/createMessage deterministically, without a model: for tests,
// demos and offline runs of servers that sample. Its configuration:
//
//	{"model": "snodo-echo", "replies": [{"match": "weather", "text": "Sunny."}]}
//
// It answers with the first reply whose "match" occurs in the last user
// message (case-insensitively), or else with "echo: " and that message,
// cut to maxTokens words. The same request always gets the same answer.
//
// Build: GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o sampling-echo.wasm .
package main

import (
	"strings"

	"github.com/snodo/snodo/abi/guest"
)

type reply struct {
	Match string `json:"match"`
	Text  string `json:"text"`
}

var cfg = struct {
	Model   string  `json:"model"`
	Replies []reply `json:"replies"`
}{Model: "snodo-echo"}

func init() {
	guest.SetName("sampling-echo")
	err := guest.Config(&cfg)
	guest.HandleSampling(func(ctx guest.Context, req guest.SamplingRequest) (guest.SamplingResult, error) {
		if err != nil {
			return guest.SamplingResult{}, err
		}
		var last string
		for _, m := range req.Messages {
			if m.Role == "user" {
				last = m.Text()
			}
		}
		text := ""
		for _, r := range cfg.Replies {
			if strings.Contains(strings.ToLower(last), strings.ToLower(r.Match)) {
				text = r.Text
				break
			}
		}
		stop := "endTurn"
		if text == "" {
			words := strings.Fields(last)
			if req.MaxTokens > 0 && len(words) > req.MaxTokens {
				words, stop = words[:req.MaxTokens], "maxTokens"
			}
			text = "echo: " + strings.Join(words, " ")
		}
		ctx.Debugf("answering %d messages with %d bytes", len(req.Messages), len(text))
		return guest.SamplingResult{Role: "assistant", Content: guest.Text(text), Model: cfg.Model, StopReason: stop}, nil
	})
}

func main() {}
