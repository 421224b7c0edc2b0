// Command samplingtools is a sampling module for the runner's tests: it
// declares tool support (sampling.tools) and answers with the names of the
// tools the request offered.
package main

import (
	"encoding/json"
	"strings"

	"github.com/snodo/snodo/abi/guest"
)

func init() {
	guest.SetName("samplingtools")
	guest.DeclareSamplingTools()
	guest.HandleSampling(func(ctx guest.Context, req guest.SamplingRequest) (guest.SamplingResult, error) {
		var tools []struct {
			Name string `json:"name"`
		}
		_ = json.Unmarshal(req.Tools, &tools)
		names := make([]string, 0, len(tools))
		for _, t := range tools {
			names = append(names, t.Name)
		}
		return guest.SamplingResult{Role: "assistant", Content: guest.Text("tools: " + strings.Join(names, ",")), Model: "tools-test"}, nil
	})
}

func main() {}
