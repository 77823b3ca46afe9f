// Team queries on the predefined teams.
#include <gtest/gtest.h>
#include <shmem.h>

TEST(TeamMyPe, PredefinedTeams_Test) {
    EXPECT_EQ(shmem_team_my_pe(SHMEM_TEAM_WORLD), shmem_my_pe());
    EXPECT_EQ(shmem_team_n_pes(SHMEM_TEAM_WORLD), shmem_n_pes());
    // Every PE of a one-node job shares memory with every other.
    EXPECT_EQ(shmem_team_my_pe(SHMEM_TEAM_SHARED), shmem_my_pe());
    EXPECT_EQ(shmem_team_n_pes(SHMEM_TEAM_SHARED), shmem_n_pes());
}

TEST(TeamMyPe, InvalidTeam_Test) {
    EXPECT_EQ(shmem_team_my_pe(SHMEM_TEAM_INVALID), -1);
    EXPECT_EQ(shmem_team_n_pes(SHMEM_TEAM_INVALID), -1);
}

TEST(TeamGetConfig, PredefinedAndInvalid_Test) {
    shmem_team_config_t config{};
    config.num_contexts = 99;
    EXPECT_EQ(shmem_team_get_config(SHMEM_TEAM_WORLD, SHMEM_TEAM_NUM_CONTEXTS, &config), 0);
    EXPECT_EQ(config.num_contexts, 0);
    EXPECT_EQ(shmem_team_get_config(SHMEM_TEAM_WORLD, 0, nullptr), 0);
    EXPECT_NE(shmem_team_get_config(SHMEM_TEAM_INVALID, SHMEM_TEAM_NUM_CONTEXTS, &config), 0);
}

TEST(TeamTranslatePe, WorldShared_Test) {
    int n = shmem_n_pes();
    for (int pe = 0; pe < n; pe++) {
        EXPECT_EQ(shmem_team_translate_pe(SHMEM_TEAM_WORLD, pe, SHMEM_TEAM_SHARED), pe);
        EXPECT_EQ(shmem_team_translate_pe(SHMEM_TEAM_SHARED, pe, SHMEM_TEAM_WORLD), pe);
    }
    EXPECT_EQ(shmem_team_translate_pe(SHMEM_TEAM_WORLD, n, SHMEM_TEAM_WORLD), -1);
    EXPECT_EQ(shmem_team_translate_pe(SHMEM_TEAM_WORLD, -1, SHMEM_TEAM_WORLD), -1);
    EXPECT_EQ(shmem_team_translate_pe(SHMEM_TEAM_INVALID, 0, SHMEM_TEAM_WORLD), -1);
    EXPECT_EQ(shmem_team_translate_pe(SHMEM_TEAM_WORLD, 0, SHMEM_TEAM_INVALID), -1);
}
