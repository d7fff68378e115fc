/* A run stopped from outside (SIGTERM from mpirun, srun, scancel or a pre-empting batch
 * system; SIGINT from Ctrl-C; SIGHUP from a closed terminal) ends with one line saying
 * what stopped it and what was saved, instead of an exit status alone:
 *
 *   stop_note_install();
 *   stop_note_set("in epoch %d; the last checkpoint is %s", epoch, path);
 *   -> "stopped by SIGTERM (mpirun, srun, scancel or the batch system) in epoch 3; the
 *       last checkpoint is run/ckpt-000000000120.ckpt"
 *
 * The handler writes the prepared line (write(2): nothing else is safe in a handler)
 * and ends the process by the same signal, so the launcher sees what it sent. For a
 * program that stops by itself at the next step (lesson 03) this is not the tool. */
#ifndef TRAIN_STOP_NOTE_H
#define TRAIN_STOP_NOTE_H

/* Handlers for SIGTERM, SIGINT and SIGHUP. */
void stop_note_install(void);
/* The words after "stopped by SIG... (...)": where the run is, what was saved (up to
 * 480 bytes). Call it from the program's one thread, not from a handler. */
void stop_note_set(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
