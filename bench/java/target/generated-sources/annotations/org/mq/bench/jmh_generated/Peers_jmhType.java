package org.mq.bench.jmh_generated;
public class Peers_jmhType extends Peers_jmhType_B3 {
}

