/* Unit tests for pool files changed behind our back (pools_file.c): removed
 * or truncated while warming, truncated once ready, and holes a claimed
 * pool's VM may punch.
 *
 * In pools_env.h's environment: a copy of the two-node sysfs fixture stands
 * in for /sys, a directory in /dev/shm (tmpfs) for the hugetlbfs mount, and
 * the real engine runs with fake_engine.h's gated ops: mmap/munmap/madvise
 * are the real calls on the tmpfs file (so st_blocks tells the truth at
 * restart) behind a gate the test opens and closes, with injectable populate
 * errors; mbind and move_pages are fakes (the fixture's node 1 does not exist
 * on this machine). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <pthread.h>
#include <stdbool.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "check.h"
#include "child.h"
#include "engine.h"
#include "fake_engine.h"
#include "fixture.h"
#include "journal.h"
#include "pools.h"
#include "pools_env.h"
#include "sysfs.h"
#include "topo.h"
#include "util.h"

static int truncate_to_zero(const char *path)
{
        return truncate(path, 0);
}

/* A pool NAME whose file CHANGE alters while it warms: it must fail as
 * file-changed, its detail saying DETAIL.  The pools are the caller's. */
static struct pools *changed_while_warming(struct env *e, const char *name, int (*change)(const char *path),
                                           const char *detail)
{
        struct pools *p;
        struct pool_view v;
        struct problem err;
        struct pool_req r = req(name, 0, 4);
        char path[PATH_MAX];

        env_init(e);
        p = start(e);
        create_gated(p, &r, &v, &err);
        pool_path(e, name, path, sizeof(path));
        CHECK_INT(change(path), ==, 0);
        fake_gate_set(false);
        wait_state(p, name, POOL_FAILED);
        CHECK_INT(pools_get(p, name, &v, NULL), ==, 0);
        CHECK_STR(v.error_slug, "file-changed");
        CHECK(strstr(v.error_detail, detail));
        return p;
}

/* Removed while warming: the warm still "succeeds" on the open fd, but the
 * pool must not turn ready with a path that names nothing. */
TEST(file_removed_while_warming)
{
        struct env e;
        struct pools *p = changed_while_warming(&e, "vanish", unlink, "removed");

        CHECK_INT(pools_delete(p, "vanish", NULL), ==, 0);
        pools_free(p);
        env_fini(&e);
}

/* Truncated while warming: the populate faults past the end, which is not a
 * lack of hugepages. */
TEST(file_truncated_while_warming)
{
        struct env e;
        struct pools *p = changed_while_warming(&e, "short", truncate_to_zero, "truncated");

        CHECK(!file_exists(&e, "short"));      /* still ours: removed like any failed pool's */
        CHECK_INT(pools_delete(p, "short", NULL), ==, 0);
        pools_free(p);
        env_fini(&e);
}

static bool failed_on_disk_within(const struct env *e, const char *name, double seconds)
{
        uint64_t until = deadline_in(seconds);

        for (;;) {
                struct journal *j = load(e);
                bool failed = jpool(j, name) && jpool(j, name)->state == POOL_FAILED;
                journal_free(j);
                if (failed || now_mono_ns() >= until)
                        return failed;
                usleep(20 * 1000);
        }
}

/* The pools started with one ready pool NAME, its file's path in PATH. */
static struct pools *start_with_ready(struct env *e, const char *name, char *path, size_t size)
{
        struct pools *p;

        env_init(e);
        p = start(e);
        ready_pool(p, name);
        pool_path(e, name, path, size);
        return p;
}

/* A ready file truncated to 0: GET says failed/file-changed at once, and the
 * upkeep thread records it. */
TEST(ready_file_truncated)
{
        struct env e;
        struct pool_view v;
        char path[PATH_MAX];
        struct pools *p = start_with_ready(&e, "emptied", path, sizeof(path));

        CHECK_INT(truncate(path, 0), ==, 0);
        CHECK_INT(pools_get(p, "emptied", &v, NULL), ==, 0);
        CHECK_STR(pool_state_name(v.state), "failed");
        CHECK_STR(v.error_slug, "file-changed");
        CHECK(failed_on_disk_within(&e, "emptied", 2));
        CHECK_INT(pools_get(p, "emptied", &v, NULL), ==, 0);
        CHECK_STR(pool_state_name(v.state), "failed");
        CHECK_INT(pools_delete(p, "emptied", NULL), ==, 0);
        pools_free(p);
        env_fini(&e);
}

/* A claimed pool whose VM gave pages back (holes) is not a change; its file
 * replaced by another is. */
TEST(claimed_file_holes_are_fine)
{
        struct env e;
        struct pool_view v;
        char path[PATH_MAX];
        struct pools *p = start_with_ready(&e, "vm", path, sizeof(path));

        CHECK_INT(pools_claim(p, "vm", &v, NULL), ==, 0);
        int fd = open(path, O_RDWR | O_CLOEXEC);
        CHECK(fd >= 0);
        CHECK_INT(fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, PAGE), ==, 0);
        close(fd);
        CHECK_INT(pools_get(p, "vm", &v, NULL), ==, 0);
        CHECK_STR(pool_state_name(v.state), "ready");
        CHECK_INT(unlink(path), ==, 0);
        write_file(path, "someone else's");
        CHECK_INT(pools_get(p, "vm", &v, NULL), ==, 0);
        CHECK_STR(v.error_slug, "file-changed");
        CHECK(strstr(v.error_detail, "replaced"));
        CHECK(failed_on_disk_within(&e, "vm", 2));
        CHECK(file_exists(&e, "vm"));          /* not ours: never removed */
        CHECK_INT(unlink(path), ==, 0);
        CHECK_INT(pools_delete(p, "vm", NULL), ==, 0);
        pools_free(p);
        env_fini(&e);
}

TEST_MAIN()
