/* clock: the monotonic clock in milliseconds. */
#include <time.h>

#include "clock.h"

uint64_t
clock_mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

struct timeval
clock_tv(uint64_t ms)
{
	struct timeval tv = {
	    (time_t)(ms / 1000), (suseconds_t)(ms % 1000) * 1000};

	return tv;
}
