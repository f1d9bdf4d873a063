module @jit_f attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<32x48xf32>, %arg1: tensor<48x64xf32>, %arg2: tensor<64x24xf32>, %arg3: tensor<2x16x24xf32>, %arg4: tensor<2x24x8xf32>) -> (tensor<32x24xf32> {jax.result_info = "result[0]"}, tensor<2x16x8xf32> {jax.result_info = "result[1]"}) {
    %0 = stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<32x48xf32>, tensor<48x64xf32>) -> tensor<32x64xf32>
    %1 = stablehlo.dot_general %0, %arg2, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<32x64xf32>, tensor<64x24xf32>) -> tensor<32x24xf32>
    %2 = stablehlo.dot_general %arg3, %arg4, batching_dims = [0] x [0], contracting_dims = [2] x [1], precision = [DEFAULT, DEFAULT] : (tensor<2x16x24xf32>, tensor<2x24x8xf32>) -> tensor<2x16x8xf32>
    return %1, %2 : tensor<32x24xf32>, tensor<2x16x8xf32>
  }
}
