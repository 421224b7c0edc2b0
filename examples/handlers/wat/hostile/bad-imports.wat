;; bad-imports: a hostile Snodo handler for the host's tests. It imports a function the host does not provide and set_output with the wrong type.
(module
  (import "snodo" "set_output" (func $set_output (param i32)))
  (import "network" "connect" (func $connect (param i32 i32) (result i32)))
  (memory (export "memory") 1)
  (func (export "snodo_describe") (result i32) (i32.const 0))
  (func (export "snodo_alloc") (param $n i32) (result i32) (i32.const 1024))
  (func (export "snodo_handle") (param i32 i32) (result i32) (i32.const 0))
)
