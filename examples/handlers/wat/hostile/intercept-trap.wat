;; intercept-trap: a hostile Snodo interceptor for the host's and snodo-run's tests. Both entry points trap: every request must fail closed, never reaching the server.
(module
  (import "snodo" "set_output" (func $set_output (param i32 i32)))
  (memory (export "memory") 2)
  (data (i32.const 16) "{\"abi\":2,\"name\":\"intercept-trap\",\"intercept\":{\"requests\":true,\"results\":true}}")

  (func (export "snodo_describe") (result i32)
    (call $set_output (i32.const 16) (i32.const 78))
    (i32.const 0))

  (func (export "snodo_alloc") (param $n i32) (result i32)
    (local $pages i32)
    (local.set $pages
      (i32.add (i32.const 1)
        (i32.shr_u (i32.add (local.get $n) (i32.const 65535)) (i32.const 16))))
    (if (i32.gt_u (local.get $pages) (memory.size))
      (then
        (if (i32.eq (memory.grow (i32.sub (local.get $pages) (memory.size))) (i32.const -1))
          (then (return (i32.const 0))))))
    (i32.const 65536))

  (func (export "snodo_intercept_request") (param $ptr i32) (param $len i32) (result i32)
    (unreachable))

  (func (export "snodo_intercept_result") (param $ptr i32) (param $len i32) (result i32)
    (unreachable))
)
