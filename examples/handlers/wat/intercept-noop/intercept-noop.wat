;; intercept-noop: the smallest Snodo interceptor, in WebAssembly text.
;;
;; It intercepts the requests and the results of every method and lets them
;; all through unchanged (status OK, no output): the cost of an interceptor
;; that decides nothing, for the benchmark. ABI: abi/ABI.md, version 2,
;; section 8.
(module
  (import "snodo" "set_output" (func $set_output (param i32 i32)))

  ;; Page 0: the manifest at 16. Page 1 onwards: the input buffer, grown
  ;; on demand.
  (memory (export "memory") 2)
  (data (i32.const 16) "{\"abi\":2,\"name\":\"intercept-noop\",\"intercept\":{\"requests\":true,\"results\":true}}")

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

  ;; OK: send the request as it is.
  (func (export "snodo_intercept_request") (param $ptr i32) (param $len i32) (result i32)
    (i32.const 0))

  ;; OK: give the answer as it is.
  (func (export "snodo_intercept_result") (param $ptr i32) (param $len i32) (result i32)
    (i32.const 0))
)
