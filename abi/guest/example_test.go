package guest_test

import (
	"encoding/json"
	"fmt"

	"github.com/snodo/snodo/abi/guest"
)

// An accepted form's values, in the order given; encoding/json writes
// them as the SDK does.
func ExampleFields() {
	res := guest.ElicitResult{Action: guest.Accept, Content: guest.Fields{
		guest.String("name", "Ada"),
		guest.Integer("age", 36),
		guest.Strings("languages", []string{"Go", "C"}),
	}}
	out, _ := json.Marshal(res)
	fmt.Println(string(out))
	// Output: {"action":"accept","content":{"name":"Ada","age":36,"languages":["Go","C"]}}
}

// A form's fields, in the request's order.
func ExampleProperties() {
	var s guest.Schema
	_ = json.Unmarshal([]byte(`{"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer"}}}`), &s)
	for _, p := range s.Properties {
		fmt.Println(p.Name, p.Type)
	}
	// Output:
	// name string
	// age integer
}
