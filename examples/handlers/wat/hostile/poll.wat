;; poll: a hostile Snodo handler for the host's tests. Each elicitation calls
;; WASI poll_oneoff once, with the subscriptions its configuration names (a
;; JSON string of one letter), logs "polling" first, and accepts with the
;; result in hex: poll_oneoff's errno (u32), the nevents it wrote (u32) and
;; the first two events (32 bytes each), 72 bytes that start as 0xaa.
;;
;;   "s"  a clock subscription: sleep 20 s (relative, monotonic clock)
;;   "u"  a clock subscription of 1 µs (userdata 0x0123456789abcdef) and an
;;        fd_write subscription on fd 1 (userdata 0x1111)
;;   "a"  a clock subscription with the abstime flag
;;   "w"  an fd_write subscription on fd 1 only (userdata 0x2222)
;;   "b"  an fd_read subscription on fd 99, which is not open (userdata 0x3333)
;;   "r"  a 20 s clock subscription (userdata 0x4444) and an fd_read
;;        subscription on stdin (userdata 0x5555)
;;   "n"  no subscriptions
;;   "o"  0x10000000 subscriptions: 48 and 32 bytes each overflow 32 bits
(module
  (import "snodo" "set_output" (func $set_output (param i32 i32)))
  (import "snodo" "log" (func $log (param i32 i32 i32)))
  (import "snodo" "config" (func $config (param i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "poll_oneoff" (func $poll_oneoff (param i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 2)
  (data (i32.const 16) "{\22abi\22:1,\22methods\22:[\22elicitation/create\22]}")
  (data (i32.const 128) "polling")
  (data (i32.const 768) "0123456789abcdef")
  (data (i32.const 1024) "{\22action\22:\22accept\22,\22content\22:{\22poll\22:\22")

  (func (export "snodo_describe") (result i32)
    (call $set_output (i32.const 16) (i32.const 42))
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

  ;; $clock writes a clock subscription (48 bytes) at $at.
  (func $clock (param $at i32) (param $userdata i64) (param $ns i64) (param $flags i32)
    (i64.store (local.get $at) (local.get $userdata))
    (i32.store8 offset=8 (local.get $at) (i32.const 0))      ;; eventtype clock
    (i32.store offset=16 (local.get $at) (i32.const 1))      ;; clockid monotonic
    (i64.store offset=24 (local.get $at) (local.get $ns))    ;; timeout
    (i64.store offset=32 (local.get $at) (i64.const 0))      ;; precision
    (i32.store16 offset=40 (local.get $at) (local.get $flags)))

  ;; $fd writes an fd_read (1) or fd_write (2) subscription at $at.
  (func $fd (param $at i32) (param $userdata i64) (param $type i32) (param $fd i32)
    (i64.store (local.get $at) (local.get $userdata))
    (i32.store8 offset=8 (local.get $at) (local.get $type))
    (i32.store offset=16 (local.get $at) (local.get $fd)))

  (func (export "snodo_handle") (param $ptr i32) (param $len i32) (result i32)
    (local $i i32) (local $b i32) (local $n i32)
    (drop (call $config (i32.const 64) (i32.const 16)))
    (local.set $i (i32.const 256))
    (loop $zero
      (i32.store8 (local.get $i) (i32.const 0))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br_if $zero (i32.lt_u (local.get $i) (i32.const 352))))
    (local.set $i (i32.const 512))
    (loop $fill
      (i32.store8 (local.get $i) (i32.const 0xaa))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br_if $fill (i32.lt_u (local.get $i) (i32.const 584))))

    (local.set $n (i32.const 1))
    (local.set $b (i32.load8_u (i32.const 65)))
    (if (i32.eq (local.get $b) (i32.const 0x73)) ;; s
      (then (call $clock (i32.const 256) (i64.const 0x5eed) (i64.const 20000000000) (i32.const 0))))
    (if (i32.eq (local.get $b) (i32.const 0x75)) ;; u
      (then
        (call $clock (i32.const 256) (i64.const 0x0123456789abcdef) (i64.const 1000) (i32.const 0))
        (call $fd (i32.const 304) (i64.const 0x1111) (i32.const 2) (i32.const 1))
        (local.set $n (i32.const 2))))
    (if (i32.eq (local.get $b) (i32.const 0x61)) ;; a
      (then (call $clock (i32.const 256) (i64.const 0xab5) (i64.const 0) (i32.const 1))))
    (if (i32.eq (local.get $b) (i32.const 0x77)) ;; w
      (then (call $fd (i32.const 256) (i64.const 0x2222) (i32.const 2) (i32.const 1))))
    (if (i32.eq (local.get $b) (i32.const 0x62)) ;; b
      (then (call $fd (i32.const 256) (i64.const 0x3333) (i32.const 1) (i32.const 99))))
    (if (i32.eq (local.get $b) (i32.const 0x72)) ;; r
      (then
        (call $clock (i32.const 256) (i64.const 0x4444) (i64.const 20000000000) (i32.const 0))
        (call $fd (i32.const 304) (i64.const 0x5555) (i32.const 1) (i32.const 0))
        (local.set $n (i32.const 2))))
    (if (i32.eq (local.get $b) (i32.const 0x6e)) ;; n
      (then (local.set $n (i32.const 0))))
    (if (i32.eq (local.get $b) (i32.const 0x6f)) ;; o
      (then (local.set $n (i32.const 0x10000000))))

    (call $log (i32.const 1) (i32.const 128) (i32.const 7))
    (i32.store (i32.const 512)
      (call $poll_oneoff (i32.const 256) (i32.const 520) (local.get $n) (i32.const 516)))

    ;; 72 bytes from 512 in hex, after the 38 bytes of the output's head.
    (local.set $i (i32.const 0))
    (loop $hex
      (local.set $b (i32.load8_u (i32.add (i32.const 512) (local.get $i))))
      (i32.store8 (i32.add (i32.const 1062) (i32.shl (local.get $i) (i32.const 1)))
        (i32.load8_u (i32.add (i32.const 768) (i32.shr_u (local.get $b) (i32.const 4)))))
      (i32.store8 (i32.add (i32.const 1063) (i32.shl (local.get $i) (i32.const 1)))
        (i32.load8_u (i32.add (i32.const 768) (i32.and (local.get $b) (i32.const 15)))))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br_if $hex (i32.lt_u (local.get $i) (i32.const 72))))
    (i32.store8 (i32.const 1206) (i32.const 0x22))
    (i32.store8 (i32.const 1207) (i32.const 0x7d))
    (i32.store8 (i32.const 1208) (i32.const 0x7d))
    (call $set_output (i32.const 1024) (i32.const 185))
    (i32.const 0))
)
