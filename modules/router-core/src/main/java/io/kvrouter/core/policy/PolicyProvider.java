package io.kvrouter.core.policy;

import java.util.List;
import java.util.function.Function;

/**
 * The policy plug-in point: a provider adds custom policies to the registry ({@link Policy#values()}), each a wire
 * name that Admin.SetPolicy accepts, a {@link Scorer} and a factory of its {@link Picker}s. Providers are found with
 * {@link java.util.ServiceLoader} when the registry is first read (at the router's startup), once: the set of
 * policies, and so every metric label set naming one, is fixed for the life of the process.
 *
 * <p>To add one: implement this interface in a public class with a public no-argument constructor, list the class
 * in {@code META-INF/services/io.kvrouter.core.policy.PolicyProvider} of its jar, and put the jar on the router's
 * class path. A picker that does not declare itself {@link Picker#threadSafe()} is only ever called under its
 * model's {@link PickerSlot} lock, by the admission actor and every inline Select alike.
 */
public interface PolicyProvider {
  /** The policies this provider adds; read once. */
  List<Definition> policies();

  /**
   * One custom policy.
   *
   * @param wireName its name in SetPolicy: 1 to 64 characters of {@code a-z}, {@code 0-9} and {@code _}, starting
   *     with a letter, unlike every other policy's
   * @param scorer fills the candidates' costs (may be a built-in, e.g. {@link Scorers#KV})
   * @param pickers makes the picker of a model that switches to this policy, from its starting state (the seed from
   *     the {@code seed} parameter, or a random one; 0 picks so far); called again at each SetPolicy
   */
  record Definition(String wireName, Scorer scorer, Function<PickerState, Picker> pickers) {}
}
