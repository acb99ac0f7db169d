/* dk_why: the one reason berth-disk failed, kept until it is reported.
 *
 * Each step that fails says why once, in words for the operator; the
 * caller only passes the -1 up. The first reason is kept: a later one
 * (a clean-up that failed after it) would hide the cause. */
#ifndef BERTH_DK_WHY_H
#define BERTH_DK_WHY_H

#define DK_WHY_MAX 1024

/* Keeps the reason (unless one is kept already) and returns -1. */
int dk_why(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Forgets the reason kept: the step that failed had another way. */
void dk_why_clear(void);
/* The reason kept, or a generic one if none was. */
const char *dk_why_get(void);

#endif
