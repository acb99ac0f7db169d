/* clock: the monotonic clock in milliseconds, for deadlines, backoff and
 * uptimes (wall-clock timestamps are proto_now_ms). */
#ifndef BERTH_CLOCK_H
#define BERTH_CLOCK_H

#include <stdint.h>
#include <sys/time.h>

uint64_t clock_mono_ms(void);
/* ms as the struct timeval libevent timers take. */
struct timeval clock_tv(uint64_t ms);

#endif
