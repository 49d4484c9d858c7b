/*
 * A region stack written as a string, outermost first: 'U' an
 * uninterruptible level, 'K' a killable one ("UKU").  The interrupt table
 * (test_region.c) and the stress test (test_region_stress.c) begin and end
 * their stacks with these; the region API's own misuse checks catch an end
 * that does not match.
 */
#ifndef TESTS_UNIT_STACK_H
#define TESTS_UNIT_STACK_H

/* Begins the levels of stack, outermost first, on the current thread. */
void test_begin_stack(const char *stack);
/* Ends them, innermost first. */
void test_end_stack(const char *stack);

#endif
