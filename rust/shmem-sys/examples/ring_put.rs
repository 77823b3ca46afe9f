//! A 2-or-more-PE job through `shmem-sys`: each PE puts its number into a symmetric array on
//! its right-hand neighbour, adds to a counter there with an AMO, and after a barrier checks
//! what its left-hand neighbour wrote. Run under the launcher: `shmemrun -n 2 ring_put`.
//! Exits 0 when every check holds, 1 (naming the check) when one fails.

use shmem_sys::*;
use std::ffi::c_int;
use std::process::ExitCode;

const N: usize = 16;

fn main() -> ExitCode {
    // SAFETY: the calls follow OpenSHMEM's contract: init first, symmetric blocks from
    // shmem_malloc/calloc on every PE in the same order, puts to them only, a barrier before
    // the data is read, frees and finalize on every PE.
    unsafe {
        shmem_init();
        let me = shmem_my_pe();
        let n = shmem_n_pes();
        let right = (me + 1) % n;
        let left = (me + n - 1) % n;

        let dest = shmem_malloc(N * std::mem::size_of::<c_int>()) as *mut c_int;
        let counter = shmem_calloc(1, std::mem::size_of::<u64>()) as *mut u64;
        if dest.is_null() || counter.is_null() {
            eprintln!("PE {me}: shmem_malloc failed");
            return ExitCode::FAILURE;
        }
        let source: Vec<c_int> = (0..N as c_int).map(|i| me * 1000 + i).collect();
        shmem_barrier_all();

        typed::int::put(dest, source.as_ptr(), N, right);
        typed::uint64::atomic_add(counter, 1 + me as u64, right);
        shmem_barrier_all();

        let mut failures = 0;
        let got = std::slice::from_raw_parts(dest, N);
        for (i, value) in got.iter().enumerate() {
            let want = left * 1000 + i as c_int;
            if *value != want {
                eprintln!("PE {me}: dest[{i}] is {value}, PE {left} put {want}");
                failures += 1;
            }
        }
        let count = typed::uint64::atomic_fetch(counter, me);
        if count != 1 + left as u64 {
            eprintln!("PE {me}: counter is {count}, PE {left} added {}", 1 + left);
            failures += 1;
        }
        let back = typed::int::g(dest.add(N - 1), right);
        if back != me * 1000 + N as c_int - 1 {
            eprintln!("PE {me}: shmem_int_g read {back} back from PE {right}");
            failures += 1;
        }
        shmem_barrier_all();
        shmem_free(counter.cast());
        shmem_free(dest.cast());
        shmem_finalize();
        if failures > 0 {
            return ExitCode::FAILURE;
        }
        println!("PE {me} of {n}: ring put, AMO and get checked");
    }
    ExitCode::SUCCESS
}
