/*
 * Tests of netclient's option table (netclient/opts.c) as --help shows it:
 * every row's help fits the helps' column, names its option's range and
 * default as the parser has them, and nc_opts_init() sets exactly the
 * defaults the help prints; the defaults are written back as the mount's
 * options say them.
 */
#include "test.h"

#include "intrfs/netclient.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* The number help gives in "(N)", or -1 when it gives none. */
static long help_default(const char *help)
{
	for (const char *p = strchr(help, '('); p; p = strchr(p + 1, '(')) {
		char *end;
		long v;

		if (p[1] < '0' || p[1] > '9')
			continue;
		v = strtol(p + 1, &end, 10);
		if (*end == ')')
			return v;
	}
	return -1;
}

TEST_IMPL(opts_help_rows)
{
	char help[512];
	const char *syntax, *key;
	unsigned n = 0;

	for (unsigned i = 0; (key = nc_opt_help_key(i)); i++, n++) {
		int len = nc_opt_help(key, &syntax, help, sizeof(help));

		ASSERT_GT(len, 0);
		ASSERT_EQ((size_t)len, strlen(help));
		ASSERT_NOT_NULL(strstr(syntax, key));
		ASSERT_NULL(strchr(help, '%')); /* every %d and %r filled */
		for (char *l = help, *nl; l; l = nl ? nl + 1 : NULL) {
			nl = strchr(l, '\n');
			if ((nl ? (size_t)(nl - l) : strlen(l)) >
			    NC_OPT_HELP_WIDTH)
				TEST__FAIL("%s: a line wider than %d: %.*s",
					   key, NC_OPT_HELP_WIDTH,
					   (int)(nl ? nl - l : (long)strlen(l)),
					   l);
		}
	}
	ASSERT_GE(n, 15);
	ASSERT_EQ(nc_opt_help("bogus", &syntax, help, sizeof(help)), -ENOENT);
	ASSERT_EQ(nc_opt_help("timeo", &syntax, help, 0), -ENOENT);
	/* Cut short, still a string. */
	ASSERT_GT(nc_opt_help("policy", &syntax, help, 8), 0);
	ASSERT_EQ(strlen(help), 7);
	ASSERT_GT(nc_opt_help("nconnect", &syntax, help, sizeof(help)), 0);
	ASSERT_CONTAINS(help, "1 to 16 (1)");
	ASSERT_GT(nc_opt_help("policy", &syntax, help, sizeof(help)), 0);
	ASSERT_CONTAINS(help, "linux");
	ASSERT_GT(nc_opt_help("send", &syntax, help, sizeof(help)), 0);
	ASSERT_CONTAINS(help, "uninterruptible");
	return 0;
}

/* What the help says a number's default is, nc_opts_init() sets. */
TEST_IMPL(opts_defaults_as_help_says)
{
	static const struct {
		const char *key;
		size_t off;
	} nums[] = {
		{ "timeo", offsetof(struct nc_opts, timeo) },
		{ "retrans", offsetof(struct nc_opts, retrans) },
		{ "retry", offsetof(struct nc_opts, retry) },
		{ "slots", offsetof(struct nc_opts, slots) },
		{ "nconnect", offsetof(struct nc_opts, nconnect) },
	};
	struct nc_opts o;
	const char *syntax;
	char help[512], buf[512];

	nc_opts_init(&o);
	for (size_t i = 0; i < ARRAY_SIZE(nums); i++) {
		unsigned v = *(unsigned *)((char *)&o + nums[i].off);

		ASSERT_GT(nc_opt_help(nums[i].key, &syntax, help, sizeof(help)),
			  0);
		if (help_default(help) != (long)v)
			TEST__FAIL("%s: the help says (%ld), the default is %u",
				   nums[i].key, help_default(help), v);
	}
	ASSERT_EQ(o.timeo_mode, NC_HARD);
	ASSERT_EQ(o.intr_mode, NC_KILLABLE);
	ASSERT_EQ(o.policy, REGION_POLICY_REGION);
	ASSERT_EQ(o.send_mode, TASK_INTERRUPTIBLE);
	ASSERT_EQ(o.rsize, 0);
	ASSERT_EQ(o.port, 0);
	/* Written back: the numbers always, those at their default not. */
	nc_opts_format(&o, buf, sizeof(buf));
	ASSERT_STR_EQ(buf, "hard,killable,timeo=600,retrans=2,retry=2,"
			   "slots=64,vers=3,proto=tcp");
	return 0;
}
