/* GridMPI's process checkpointer (crates/checkpoint, docs/checkpoint.md). */
#ifndef GRIDMPI_CHECKPOINT_H
#define GRIDMPI_CHECKPOINT_H
#ifdef __cplusplus
extern "C" {
#endif
/* Write an image of the calling process to path (from a thread, not from a
 * signal handler). Returns 0 in this process once the image is complete, 1
 * when the process was restored from the image by gridmpi-restore, -1 on an
 * error (printed on stderr; the process goes on). */
int gridmpi_checkpoint(const char *path);
/* Start a thread that, ms milliseconds from now, checkpoints the process to
 * path wherever its threads are, then kills it with SIGKILL if then_kill.
 * Returns 0, -1 if the thread cannot start. A failed checkpoint prints why
 * and exits with status 3. In a restored process the thread just ends. */
int gridmpi_checkpoint_after(unsigned ms, const char *path, int then_kill);
#ifdef __cplusplus
}
#endif
#endif
