package io.kvrouter.core.admission;

/** Outcome of a fenced mutation (Release, MarkPrefillDone, Renew): applied only if it changed the live booking. */
public record MutationResult(boolean applied, long leaseExpiresAtMillis) {
  public static final MutationResult NOT_APPLIED = new MutationResult(false, 0);
}
