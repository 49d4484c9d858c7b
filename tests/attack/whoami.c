/*
 * attack-whoami: prints the real and effective user ids it runs with.  The
 * program the attacks of tests/attack/ make setuid root on an export and
 * then run by the export's path: "euid=0" is a local root gained.
 */
#include <stdio.h>
#include <unistd.h>

int main(void)
{
	printf("uid=%u euid=%u\n", (unsigned)getuid(), (unsigned)geteuid());
	return 0;
}
