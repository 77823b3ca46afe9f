// main.cc: gtest entry point for multi-PE unit tests. Every PE runs the same tests in the same
// order; the first failing assertion on any PE ends the whole job (shmem_global_exit), so its
// peers never wait in a collective that the failed PE will not reach.
#include <gtest/gtest.h>
#include <shmem.h>

#include <cstdio>

namespace {

class GlobalExitOnFailure : public ::testing::EmptyTestEventListener {
    void OnTestPartResult(const ::testing::TestPartResult &result) override {
        if (!result.failed()) return;
        std::fprintf(stderr, "PE %d: FAILED %s:%d: %s\n", shmem_my_pe(),
                     result.file_name() ? result.file_name() : "?", result.line_number(),
                     result.summary());
        shmem_global_exit(1);
    }
};

}  // namespace

int main(int argc, char **argv) {
    ::testing::InitGoogleTest(&argc, argv);
    // Started at the highest thread level, which thread_test.cc relies on; plain shmem_init is
    // what the multi-PE C programs and examples use.
    int provided = -1;
    if (shmem_init_thread(SHMEM_THREAD_MULTIPLE, &provided) != 0 ||
        provided != SHMEM_THREAD_MULTIPLE) {
        std::fprintf(stderr, "shmem_init_thread gave level %d\n", provided);
        return 1;
    }
    auto &listeners = ::testing::UnitTest::GetInstance()->listeners();
    if (shmem_my_pe() != 0) {
        // One report per job is enough; failures on other PEs are printed by the listener.
        delete listeners.Release(listeners.default_result_printer());
    }
    listeners.Append(new GlobalExitOnFailure);
    int rc = RUN_ALL_TESTS();
    shmem_finalize();
    return rc;
}
