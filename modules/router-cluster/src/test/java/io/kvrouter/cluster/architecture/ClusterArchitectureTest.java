package io.kvrouter.cluster.architecture;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;
import static com.tngtech.archunit.library.dependencies.SlicesRuleDefinition.slices;

import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import org.junit.jupiter.api.Test;

/**
 * router-cluster's packages by concept form no cycle; the admission actor is the top of them (only the node's wiring
 * in the root package sits above it): replication, regions, KV events and the model slots never reach into it.
 */
class ClusterArchitectureTest {
  private static final JavaClasses CLUSTER = new ClassFileImporter()
      .withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
      .importPackages("io.kvrouter.cluster");

  @Test
  void conceptPackagesAreFreeOfCycles() {
    slices().matching("io.kvrouter.cluster.(*)..").should().beFreeOfCycles().check(CLUSTER);
  }

  @Test
  void replicationRegionsKvEventsAndSlotsDoNotReachIntoAdmission() {
    noClasses().that().resideInAnyPackage("io.kvrouter.cluster.replication..", "io.kvrouter.cluster.regions..",
            "io.kvrouter.cluster.kvevents..", "io.kvrouter.cluster.models..", "io.kvrouter.cluster.explain..")
        .should().dependOnClassesThat().resideInAPackage("io.kvrouter.cluster.admission..")
        .check(CLUSTER);
  }

  @Test
  void theModelSlotsDependOnNoOtherConcept() {
    noClasses().that().resideInAPackage("io.kvrouter.cluster.models..")
        .should().dependOnClassesThat().resideInAnyPackage("io.kvrouter.cluster.replication..",
            "io.kvrouter.cluster.regions..", "io.kvrouter.cluster.kvevents..", "io.kvrouter.cluster.explain..")
        .check(CLUSTER);
  }

  @Test
  void onlyTheWiringLivesInTheRootPackage() {
    noClasses().that().resideInAPackage("io.kvrouter.cluster.(*)..")
        .should().dependOnClassesThat().resideInAPackage("io.kvrouter.cluster")
        .check(CLUSTER);
  }

  @Test
  void theClusterLayerKnowsNoTransport() {
    noClasses().should().dependOnClassesThat()
        .resideInAnyPackage("io.kvrouter.server..", "io.kvrouter.api..", "io.grpc..")
        .check(CLUSTER);
  }

  /** Protobuf is the replication wire's format between nodes: only that serializer and its messages know it. */
  @Test
  void onlyTheReplicationWireKnowsProtobuf() {
    noClasses().that().resideOutsideOfPackage("io.kvrouter.cluster.replication.proto..")
        .and().doNotHaveFullyQualifiedName("io.kvrouter.cluster.replication.ReplicationSerializer")
        .should().dependOnClassesThat().resideInAPackage("com.google.protobuf..")
        .check(CLUSTER);
  }
}
