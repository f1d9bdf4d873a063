module @jit_f attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<3x5xf32>) -> (tensor<3x5xf16> {jax.result_info = "result[0]"}, tensor<3x5xi8> {jax.result_info = "result[1]"}, tensor<3x5xui32> {jax.result_info = "result[2]"}, tensor<3x5xi1> {jax.result_info = "result[3]"}, tensor<3x5xf32> {jax.result_info = "result[4]"}) {
    %0 = stablehlo.convert %arg0 : (tensor<3x5xf32>) -> tensor<3x5xf16>
    %cst = stablehlo.constant dense<4.000000e+01> : tensor<f32>
    %1 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<3x5xf32>
    %2 = stablehlo.multiply %arg0, %1 : tensor<3x5xf32>
    %c = stablehlo.constant dense<-128> : tensor<i32>
    %c_0 = stablehlo.constant dense<127> : tensor<i32>
    %3 = call @clip(%2, %c, %c_0) : (tensor<3x5xf32>, tensor<i32>, tensor<i32>) -> tensor<3x5xf32>
    %4 = stablehlo.convert %3 : (tensor<3x5xf32>) -> tensor<3x5xi8>
    %5 = stablehlo.abs %arg0 : tensor<3x5xf32>
    %cst_1 = stablehlo.constant dense<1.000000e+03> : tensor<f32>
    %6 = stablehlo.broadcast_in_dim %cst_1, dims = [] : (tensor<f32>) -> tensor<3x5xf32>
    %7 = stablehlo.multiply %5, %6 : tensor<3x5xf32>
    %8 = stablehlo.convert %7 : (tensor<3x5xf32>) -> tensor<3x5xui32>
    %cst_2 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %9 = stablehlo.broadcast_in_dim %cst_2, dims = [] : (tensor<f32>) -> tensor<3x5xf32>
    %10 = stablehlo.compare GT, %arg0, %9, FLOAT : (tensor<3x5xf32>, tensor<3x5xf32>) -> tensor<3x5xi1>
    %cst_3 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %11 = stablehlo.broadcast_in_dim %cst_3, dims = [] : (tensor<f32>) -> tensor<3x5xf32>
    %12 = stablehlo.compare GT, %arg0, %11, FLOAT : (tensor<3x5xf32>, tensor<3x5xf32>) -> tensor<3x5xi1>
    %13 = stablehlo.convert %12 : (tensor<3x5xi1>) -> tensor<3x5xf32>
    %14 = stablehlo.convert %arg0 : (tensor<3x5xf32>) -> tensor<3x5xbf16>
    %15 = stablehlo.convert %14 : (tensor<3x5xbf16>) -> tensor<3x5xf32>
    %16 = stablehlo.add %13, %15 : tensor<3x5xf32>
    return %0, %4, %8, %10, %16 : tensor<3x5xf16>, tensor<3x5xi8>, tensor<3x5xui32>, tensor<3x5xi1>, tensor<3x5xf32>
  }
  func.func private @clip(%arg0: tensor<3x5xf32>, %arg1: tensor<i32>, %arg2: tensor<i32>) -> tensor<3x5xf32> {
    %0 = stablehlo.convert %arg1 : (tensor<i32>) -> tensor<f32>
    %1 = stablehlo.broadcast_in_dim %0, dims = [] : (tensor<f32>) -> tensor<3x5xf32>
    %2 = stablehlo.maximum %1, %arg0 : tensor<3x5xf32>
    %3 = stablehlo.convert %arg2 : (tensor<i32>) -> tensor<f32>
    %4 = stablehlo.broadcast_in_dim %3, dims = [] : (tensor<f32>) -> tensor<3x5xf32>
    %5 = stablehlo.minimum %4, %2 : tensor<3x5xf32>
    return %5 : tensor<3x5xf32>
  }
}
