print("not a build")
