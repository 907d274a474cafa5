package io.kvrouter.core.selection;

/**
 * How a Book uses a model's prefill and decode workers.
 *
 * <ul>
 *   <li>{@link #AUTO}: a prefill and a decode rank when the model has workers of both roles (the decode rank alone,
 *       doing its own prefill, when the policy's conditional-disaggregation threshold says the uncached prompt is
 *       short), else an aggregated rank; a model with decode workers only books a decode rank alone.
 *   <li>{@link #AGGREGATED}: one aggregated rank; FAILED_PRECONDITION {@code NO_AGGREGATED_WORKERS} when the model
 *       has none.
 *   <li>{@link #DISAGGREGATED}: a prefill and a decode rank; FAILED_PRECONDITION {@code NO_PREFILL_WORKERS} or
 *       {@code NO_DECODE_WORKERS} when the model lacks either role.
 * </ul>
 */
public enum Disaggregation {
  AUTO,
  AGGREGATED,
  DISAGGREGATED
}
