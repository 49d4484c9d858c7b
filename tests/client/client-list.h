/* Every client test and its timeout in ms (tests/lib/runner.c runs them). */
TEST_ENTRY(client_mount_and_exports, 30000)
TEST_ENTRY(client_every_procedure, 30000)
TEST_ENTRY(client_data_sizes, 60000)
TEST_ENTRY(client_errors, 30000)
TEST_ENTRY(client_caller_owns_what_it_creates, 30000)
TEST_ENTRY(client_mount_errors, 30000)
TEST_ENTRY(client_major_timeouts, 60000)
TEST_ENTRY(client_nlm_locks, 30000)
