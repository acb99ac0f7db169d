/* dk_run: the programs berth-disk runs (mkfs.ext4, resize2fs, cp).
 *
 * Each runs to its end with stdin and stdout on /dev/null (stdout is
 * berth-disk's report to berthd: nothing else may write there) and a
 * fixed PATH; its stderr is kept so that a failure says the program's
 * own words. */
#ifndef BERTH_DK_RUN_H
#define BERTH_DK_RUN_H

/* Runs argv (argv[0] a full path) and waits. 0 if it exited with a code
 * from 0 to ok_max (e2fsck's 1 is "errors corrected"); else -1 with
 * dk_why: "<what>: <its last line of stderr, or how it ended>". */
int dk_run(const char *what, const char *const *argv, int ok_max);

#endif
