/* ws_deliver: berth-workspace's deliver mode (task.deliver), as the
 * runtime's user:
 *
 *	berth-workspace deliver --dir DIR --branch B --message M
 *	    --author-name N --author-email E --diff-fd N
 *	    [--push URL [--credential-fd N]]
 *
 * commits the files of the clone at DIR, as they are, on its HEAD commit
 * (the base), creates refs/heads/B there for it (never moving a branch
 * that exists), writes the diff from the base to fd N (a file of
 * berthd's), pushes the commit to URL as a new branch B if asked, and
 * reports on stdout in wsreport.h's deliver lines.
 *
 * Nothing of the clone's own git set-up applies: the index, the tree and
 * the commit are made in a fresh git directory of berth's own (no
 * config, hook, info/exclude or attributes of the clone's), whose object
 * store is the clone's; the clone's repository is touched only to read
 * HEAD and create (or, after a failed push, remove) the branch, with
 * every hook off. The push goes to URL from that directory, so none of
 * the clone's remotes, push URLs or url.<base>.insteadOf apply. */
#ifndef BERTH_WS_DELIVER_H
#define BERTH_WS_DELIVER_H

/* argv[0] is "deliver"; self is the program's path (git's credential
 * helper). Returns the exit status. */
int ws_deliver_main(int argc, char **argv, const char *self);

#endif
