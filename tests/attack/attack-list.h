/*
 * Every attack on a server the project starts, and its timeout in ms
 * (tests/lib/runner.c runs them; tests/run's attack suite, against each
 * kind of server).
 */
TEST_ENTRY(attack_setuid, 30000)
TEST_ENTRY(attack_device, 30000)
TEST_ENTRY(attack_forged_handle, 30000)
TEST_ENTRY(attack_netfault, 30000)
TEST_ENTRY(attack_link_runner, 60000)
TEST_ENTRY(attack_hard_link_runner, 60000)
