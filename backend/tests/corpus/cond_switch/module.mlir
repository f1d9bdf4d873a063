module @jit_f attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<i1>, %arg1: tensor<i32>, %arg2: tensor<2x3xf32>) -> (tensor<2x3xf32> {jax.result_info = "result[0]"}, tensor<2x3xf32> {jax.result_info = "result[1]"}, tensor<2x3xf32> {jax.result_info = "result[2]"}) {
    %0 = stablehlo.convert %arg0 : (tensor<i1>) -> tensor<i32>
    %1 = "stablehlo.case"(%0) ({
      %7 = stablehlo.cosine %arg2 : tensor<2x3xf32>
      %cst = stablehlo.constant dense<1.000000e+00> : tensor<f32>
      %8 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<2x3xf32>
      %9 = stablehlo.subtract %7, %8 : tensor<2x3xf32>
      stablehlo.return %9 : tensor<2x3xf32>
    }, {
      %7 = stablehlo.sine %arg2 : tensor<2x3xf32>
      %cst = stablehlo.constant dense<2.000000e+00> : tensor<f32>
      %8 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<2x3xf32>
      %9 = stablehlo.multiply %7, %8 : tensor<2x3xf32>
      stablehlo.return %9 : tensor<2x3xf32>
    }) : (tensor<i32>) -> tensor<2x3xf32>
    %c = stablehlo.constant dense<0> : tensor<i32>
    %c_0 = stablehlo.constant dense<2> : tensor<i32>
    %2 = stablehlo.clamp %c, %arg1, %c_0 : tensor<i32>
    %3 = "stablehlo.case"(%2) ({
      %cst = stablehlo.constant dense<1.000000e+00> : tensor<f32>
      %7 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<2x3xf32>
      %8 = stablehlo.add %arg2, %7 : tensor<2x3xf32>
      stablehlo.return %8 : tensor<2x3xf32>
    }, {
      %7 = stablehlo.multiply %arg2, %arg2 : tensor<2x3xf32>
      stablehlo.return %7 : tensor<2x3xf32>
    }, {
      %7 = stablehlo.negate %arg2 : tensor<2x3xf32>
      stablehlo.return %7 : tensor<2x3xf32>
    }) : (tensor<i32>) -> tensor<2x3xf32>
    %c_1 = stablehlo.constant dense<5> : tensor<i32>
    %4 = stablehlo.add %arg1, %c_1 : tensor<i32>
    %c_2 = stablehlo.constant dense<0> : tensor<i32>
    %c_3 = stablehlo.constant dense<1> : tensor<i32>
    %5 = stablehlo.clamp %c_2, %4, %c_3 : tensor<i32>
    %6 = "stablehlo.case"(%5) ({
      %cst = stablehlo.constant dense<1.000000e+00> : tensor<f32>
      %7 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<2x3xf32>
      %8 = stablehlo.add %arg2, %7 : tensor<2x3xf32>
      stablehlo.return %8 : tensor<2x3xf32>
    }, {
      %cst = stablehlo.constant dense<3.000000e+00> : tensor<f32>
      %7 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<2x3xf32>
      %8 = stablehlo.multiply %arg2, %7 : tensor<2x3xf32>
      stablehlo.return %8 : tensor<2x3xf32>
    }) : (tensor<i32>) -> tensor<2x3xf32>
    return %1, %3, %6 : tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>
  }
}
